"""The cluster's CloudFormation template, built from Python (one module per part).

`build_template()` is the only entry point; `cli/deploy/aws/rendered/resolute.json` is its
rendering, checked in and kept equal by a test, so a reviewer (or cfn-lint, or checkov) can read
exactly what `up` sends.
"""
