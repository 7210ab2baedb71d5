"""How `up --dry-run` shows what `up` would do."""

from __future__ import annotations

from cli.deploy.aws.cost import PRICES_AS_OF, estimate
from cli.deploy.aws.options import DeployOptions
from cli.deploy.aws.stack import DryRun
from cli.render import echo, print_table, to_yaml


def show_dry_run(plan: DryRun, options: DeployOptions) -> None:
    verb = "update" if plan.exists else "create"
    echo(f"Dry run: `up` would {verb} stack {options.cluster_id} in {options.region}. "
         "No change was made.")  # fmt: skip
    echo("\nTemplate diff:")
    echo("\n".join(plan.template_diff) if plan.template_diff else "  (template unchanged)")
    echo("\nParameters:")
    if plan.parameter_changes:
        print_table(
            ["Parameter", "Deployed", "Up would send"],
            [(k, "-" if old is None else old, new) for k, old, new in plan.parameter_changes],
        )
    else:
        echo("  (parameters unchanged)")
    echo("\nMaster config (rendered on the master at boot; <...> are filled in there):")
    echo(to_yaml(plan.master_config).rstrip())
    lines = estimate(
        options.master_instance_type,
        options.db_instance_type,
        options.db_size,
        options.compute_agent_instance_type,
        options.aux_agent_instance_type,
        options.max_dynamic_agents,
    )
    rows = [(line.item, "unknown" if line.hourly is None else f"${line.hourly:.3f}")
            for line in lines]  # fmt: skip
    always = sum(line.hourly or 0 for line in lines[:3])
    echo(f"\nCost per hour (on-demand list prices of {PRICES_AS_OF}, us-east-1/us-west-2):")
    print_table(["Item", "USD/hour"], rows)
    echo(f"Always on: ${always:.3f}/hour (about ${always * 730:.0f}/month); agents only while "
         "there is work.")  # fmt: skip
