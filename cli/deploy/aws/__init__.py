"""`det deploy aws`: a Resolute cluster on AWS through CloudFormation (docs/deploy-aws.md)."""
