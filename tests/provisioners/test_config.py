"""Provider config models: every default and validation of reference §2.9, §2.6 and §2.7."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML

from provisioners.config import (
    SPOT_PRICE_ON_DEMAND,
    AwsNetworkInterface,
    AwsProviderConfig,
    AwsTag,
    GcpInstanceType,
    GcpNetworkInterface,
    GcpProviderConfig,
    GcpServiceAccount,
    aws_instance_type_slots,
    default_agent_install,
    max_pool_slots,
    parse_pool_providers,
    parse_provider,
    slots_per_instance,
)
from resource_pools.config import ResourcesConfig
from resource_pools.config_errors import format_config_errors

pytestmark = pytest.mark.no_docker_engine  # it names docker, starts no container

AWS_REQUIRED = {"type": "aws", "region": "us-west-2", "image_id": "ami-0123", "ssh_key_name": "k"}
GCP_REQUIRED = {"type": "gcp", "project": "proj", "zone": "us-central1-a"}


@pytest.fixture(autouse=True)
def _no_cloud_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_DEFAULT_REGION", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_COMPUTE_ZONE"):
        monkeypatch.delenv(name, raising=False)


def aws(**keys: Any) -> dict[str, Any]:
    return {**AWS_REQUIRED, **keys}


def gcp(**keys: Any) -> dict[str, Any]:
    return {**GCP_REQUIRED, **keys}


def errors_of(data: Any) -> list[str]:
    with pytest.raises(ValidationError) as info:
        parse_provider(data)
    return format_config_errors(info.value)


def load_yaml(text: str) -> Any:
    return YAML(typ="safe").load(text)


# --- defaults -------------------------------------------------------------------------------

COMMON_DEFAULTS: dict[str, Any] = {
    "master_url": None,
    "master_cert_name": "",
    "agent_docker_image": "determinedai/determined-agent:0.38.1",
    "agent_docker_network": "default",
    "agent_docker_runtime": "runc",
    "agent_reconnect_attempts": 5,
    "agent_reconnect_backoff": 5,
    "agent_config_file_contents": None,
    "max_idle_agent_period": timedelta(minutes=20),
    "max_agent_starting_period": timedelta(minutes=20),
    "min_instances": 0,
    "max_instances": 5,
    "launch_error_timeout": timedelta(0),
    "launch_error_retries": 0,
    "fallback_pool": None,
}
AWS_DEFAULTS: dict[str, Any] = {
    **COMMON_DEFAULTS,
    "root_volume_size": 200,
    "tag_key": "managed_by",
    "tag_value": "determined-ai-determined",
    "instance_name": "determined-ai-agent",
    "network_interface": AwsNetworkInterface(public_ip=True, subnet_id="", security_group_id=""),
    "iam_instance_profile_arn": "",
    "instance_type": "g4dn.metal",
    "instance_slots": None,
    "log_group": "",
    "log_stream": "",
    "spot": False,
    "spot_max_price": "OnDemand",
    "custom_tags": (),
    "cpu_slots_allowed": False,
    "endpoint_url": None,
    "metadata_url": "http://169.254.169.254",
}
GCP_DEFAULTS: dict[str, Any] = {
    **COMMON_DEFAULTS,
    "boot_disk_size": 200,
    "boot_disk_source_image": "projects/determined-ai/global/images/det-environments-0736b6d",
    "boot_disk_type": "projects/proj/zones/us-central1-a/diskTypes/pd-standard",
    "label_key": "managed-by",
    "label_value": "determined-ai-determined",
    "name_prefix": "determined-ai-determined-",
    "labels": {},
    "network_tags": (),
    "network_interface": GcpNetworkInterface(network="", subnetwork="", external_ip=False),
    "service_account": GcpServiceAccount(email="", scopes=()),
    "instance_type": GcpInstanceType(
        machine_type="n1-standard-32", gpu_type="nvidia-tesla-t4", gpu_num=4, preemptible=False
    ),
    "operation_timeout_period": timedelta(minutes=5),
    "cpu_slots_allowed": False,
    "use_cloud_logging": False,
    "base_config": None,
    "spot": False,
    "api_endpoint": None,
    "metadata_url": "http://metadata.google.internal",
}


@pytest.mark.parametrize(("key", "expected"), AWS_DEFAULTS.items())
def test_aws_default(key: str, expected: Any) -> None:
    assert getattr(parse_provider(aws()), key) == expected


@pytest.mark.parametrize(("key", "expected"), GCP_DEFAULTS.items())
def test_gcp_default(key: str, expected: Any) -> None:
    assert getattr(parse_provider(gcp()), key) == expected


@pytest.mark.parametrize("base", [aws(), gcp()])
def test_scripts_default_empty_and_agent_installs_this_version(base: dict[str, Any]) -> None:
    config = parse_provider(base)
    assert config.startup_script.get_secret_value() == ""
    assert config.container_startup_script.get_secret_value() == ""
    assert config.agent_install == default_agent_install()
    assert config.agent_install.startswith("python3 -m pip install resolute")


@pytest.mark.parametrize("base", [aws(), gcp()])
def test_null_means_the_default(base: dict[str, Any]) -> None:
    keys = ("launch_error_timeout", "max_instances", "agent_docker_network", "startup_script")
    config = parse_provider({**base, **dict.fromkeys(keys)})
    assert config.launch_error_timeout == timedelta(0)
    assert config.max_instances == 5
    assert config.agent_docker_network == "default"


def test_empty_spot_price_is_the_on_demand_placeholder() -> None:
    config = parse_provider(aws(spot_max_price=""))
    assert config.spot_max_price == SPOT_PRICE_ON_DEMAND
    assert isinstance(config, AwsProviderConfig)
    assert config.spot_price_to_send is None
    priced = parse_provider(aws(spot_max_price="0.90"))
    assert isinstance(priced, AwsProviderConfig)
    assert priced.spot_price_to_send == "0.90"


def test_service_account_scope_defaults_to_cloud_platform_with_an_email() -> None:
    config = parse_provider(gcp(service_account={"email": "sa@proj.iam.gserviceaccount.com"}))
    assert isinstance(config, GcpProviderConfig)
    assert config.service_account.scopes == ("https://www.googleapis.com/auth/cloud-platform",)
    own = parse_provider(gcp(service_account={"email": "e@x", "scopes": ["s1"]}))
    assert isinstance(own, GcpProviderConfig)
    assert own.service_account.scopes == ("s1",)


def test_boot_disk_type_kept_when_given() -> None:
    config = parse_provider(gcp(boot_disk_type="zones/z/diskTypes/pd-ssd"))
    assert isinstance(config, GcpProviderConfig)
    assert config.boot_disk_type == "zones/z/diskTypes/pd-ssd"


# --- values from the environment instead of the metadata server -------------------------------


def test_region_from_aws_default_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    data = {k: v for k, v in aws().items() if k != "region"}
    assert parse_provider(data).region == "eu-west-1"  # type: ignore[union-attr]
    assert parse_provider(aws(region="us-east-2")).region == "us-east-2"  # type: ignore[union-attr]


def test_region_required_off_ec2() -> None:
    data = {k: v for k, v in aws().items() if k != "region"}
    assert errors_of(data) == [
        "region: required off EC2: set region, or AWS_DEFAULT_REGION on the master"
    ]


def test_project_and_zone_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "envproj")
    monkeypatch.setenv("CLOUDSDK_COMPUTE_ZONE", "europe-west4-b")
    config = parse_provider({"type": "gcp"})
    assert isinstance(config, GcpProviderConfig)
    assert (config.project, config.zone) == ("envproj", "europe-west4-b")
    assert config.boot_disk_type == "projects/envproj/zones/europe-west4-b/diskTypes/pd-standard"


def test_project_and_zone_required_off_gce() -> None:
    assert errors_of({"type": "gcp"}) == [
        "project: required off GCE: set project, or GOOGLE_CLOUD_PROJECT on the master",
        "zone: required off GCE: set zone, or CLOUDSDK_COMPUTE_ZONE on the master",
    ]


# --- validation: each error names its key -----------------------------------------------------

COMMON_BAD: list[tuple[dict[str, Any], str]] = [
    ({"master_url": "ftp://10.0.0.1:8080"}, "master_url: the scheme must be http or https"),
    ({"master_url": "10.0.0.1:8080"}, "master_url: the scheme must be http or https"),
    ({"master_url": "http://"}, "master_url: no host"),
    ({"master_url": "http://10.0.0.1:8080/api"}, "master_url: must have no path"),
    ({"master_url": "http://10.0.0.1:8080?x=1"}, "master_url: must have no path"),
    ({"master_url": "http://10.0.0.1:99999"}, "master_url: bad port"),
    ({"agent_docker_image": ""}, "agent_docker_image:"),
    ({"agent_docker_image": "  "}, "agent_docker_image: must not be empty"),
    ({"agent_install": " "}, "agent_install: must not be empty"),
    ({"agent_reconnect_attempts": -1}, "agent_reconnect_attempts:"),
    ({"agent_reconnect_backoff": -1}, "agent_reconnect_backoff:"),
    ({"max_idle_agent_period": 0}, "max_idle_agent_period: must be greater than 0"),
    ({"max_idle_agent_period": "0s"}, "max_idle_agent_period: must be greater than 0"),
    ({"max_idle_agent_period": "soon"}, "max_idle_agent_period: 'soon' is not a duration"),
    ({"max_agent_starting_period": "-1m"}, "max_agent_starting_period: duration must not be"),
    ({"max_agent_starting_period": 0}, "max_agent_starting_period: must be greater than 0"),
    ({"min_instances": -1}, "min_instances: Input should be greater than or equal to 0"),
    ({"max_instances": 0}, "max_instances: Input should be greater than 0"),
    ({"min_instances": 3, "max_instances": 2}, "max_instances: must be >= min_instances (3)"),
    ({"launch_error_timeout": "-5s"}, "launch_error_timeout: duration must not be negative"),
    ({"launch_error_retries": -1}, "launch_error_retries:"),
    ({"fallback_pool": ""}, "fallback_pool: must name a pool"),
    ({"metadata_url": "169.254.169.254"}, "metadata_url: metadata_url must be an http"),
    ({"agent_config_file_contents": 5}, "agent_config_file_contents"),
    ({"no_such_key": 1}, "no_such_key: Extra inputs are not permitted"),
]
AWS_BAD: list[tuple[dict[str, Any], str]] = [
    ({"master_url": "http://internal-ip:8080"}, "master_url: 'internal-ip' is an alias of the"),
    ({"root_volume_size": 99}, "root_volume_size: Input should be greater than or equal to 100"),
    ({"image_id": ""}, "image_id: String should have at least 1 character"),
    ({"ssh_key_name": ""}, "ssh_key_name: must not be empty"),
    ({"ssh_key_name": None}, "ssh_key_name: Input should be a valid string"),
    ({"tag_key": ""}, "tag_key:"),
    ({"tag_value": ""}, "tag_value:"),
    ({"instance_type": "x1.huge"}, "instance_type: unknown instance type 'x1.huge'"),
    ({"instance_type": "t2"}, "instance_type: unknown instance type 't2'"),
    ({"instance_slots": -1}, "instance_slots: Input should be greater than or equal to 0"),
    ({"spot_max_price": "1.2.3"}, "spot_max_price: must be a price of digits"),
    ({"spot_max_price": "$1"}, "spot_max_price: must be a price of digits"),
    ({"spot_max_price": "."}, "spot_max_price: must be a price of digits"),
    ({"spot_max_price": "-1"}, "spot_max_price: must be a price of digits"),
    ({"custom_tags": [{"key": "Name", "value": "x"}]}, "custom_tags[0].key: the provisioner"),
    ({"custom_tags": [{"key": "managed_by"}]}, "custom_tags[0].key: the provisioner sets"),
    ({"custom_tags": [{"key": "determined-resource-pool"}]}, "custom_tags[0].key: the prov"),
    ({"custom_tags": [{"key": "a"}, {"key": "a"}]}, "custom_tags[1].key: duplicate tag key"),
    ({"custom_tags": [{"key": "aws:x"}]}, "custom_tags[0].key: tag keys starting with 'aws:'"),
    ({"custom_tags": [{"key": ""}]}, "custom_tags[0].key:"),
    ({"custom_tags": [{"value": "v"}]}, "custom_tags[0].key: Field required"),
    ({"network_interface": {"public_ip": "maybe"}}, "network_interface.public_ip:"),
    ({"network_interface": {"vpc": "x"}}, "network_interface.vpc: Extra inputs"),
    ({"endpoint_url": "127.0.0.1:5000"}, "endpoint_url: endpoint_url must be an http"),
]
GCP_BAD: list[tuple[dict[str, Any], str]] = [
    ({"master_url": "http://local-ipv4:8080"}, "master_url: 'local-ipv4' is an alias of the"),
    ({"boot_disk_size": 50}, "boot_disk_size: Input should be greater than or equal to 100"),
    ({"boot_disk_source_image": ""}, "boot_disk_source_image:"),
    ({"label_key": "Managed"}, "label_key: label key 'Managed'"),
    ({"label_value": "a" * 31}, "label_value: must be 1 to 30 characters"),
    ({"label_value": "cluster-"}, "label_value: must be 1 to 30 characters and not end in '-'"),
    ({"label_value": ""}, "label_value: must be 1 to 30"),
    ({"label_value": "My.Cluster"}, "label_value: label value 'My.Cluster'"),
    ({"name_prefix": "Det-"}, "name_prefix: must start with a lowercase letter"),
    ({"name_prefix": "1det"}, "name_prefix: must start with a lowercase letter"),
    ({"labels": {"Team": "a"}}, "labels.Team: label key 'Team'"),
    ({"labels": {"team": "A B"}}, "labels.team: label value 'A B'"),
    ({"labels": {"managed-by": "x"}}, "labels.managed-by: the provisioner sets the label"),
    ({"labels": {"determined-resource-pool": "x"}}, "labels.determined-resource-pool: the"),
    ({"network_tags": ["Allow-SSH"]}, "network_tags: network tag 'Allow-SSH'"),
    ({"network_tags": ["ssh-"]}, "network_tags: network tag 'ssh-'"),
    ({"network_interface": {"external_ip": "x"}}, "network_interface.external_ip:"),
    ({"service_account": {"mail": "x"}}, "service_account.mail: Extra inputs"),
    ({"instance_type": {"machine_type": "e2-standard-4"}}, "instance_type.machine_type: 'e2-"),
    ({"instance_type": {"machine_type": "n1-standard"}}, "instance_type.machine_type: 'n1-"),
    ({"instance_type": {"machine_type": "n1-standard-8-x"}}, "instance_type.machine_type:"),
    ({"instance_type": {"gpu_type": "nvidia-h100"}}, "instance_type.gpu_type: unknown GPU type"),
    ({"instance_type": {"gpu_num": 3}}, "instance_type.gpu_num: nvidia-tesla-t4 allows 0, 1, 2"),
    ({"instance_type": {"gpu_num": -1}}, "instance_type.gpu_num: Input should be greater"),
    ({"operation_timeout_period": "0s"}, "operation_timeout_period: must be greater than 0"),
    ({"spot": True, "instance_type": {"preemptible": True}}, "spot: spot and instance_type.pre"),
    ({"api_endpoint": "localhost"}, "api_endpoint: api_endpoint must be an http"),
]


@pytest.mark.parametrize(("keys", "message"), COMMON_BAD + AWS_BAD)
def test_aws_refuses(keys: dict[str, Any], message: str) -> None:
    errors = errors_of(aws(**keys))
    assert any(e.startswith(message) for e in errors), errors


@pytest.mark.parametrize(("keys", "message"), COMMON_BAD + GCP_BAD)
def test_gcp_refuses(keys: dict[str, Any], message: str) -> None:
    errors = errors_of(gcp(**keys))
    assert any(e.startswith(message) for e in errors), errors


def test_several_field_errors_are_reported_together() -> None:
    errors = errors_of(aws(min_instances=-1, root_volume_size=1, ssh_key_name=""))
    assert [e.split(":")[0] for e in errors] == [
        "min_instances",
        "root_volume_size",
        "ssh_key_name",
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "hpc"}, "type: type hpc (Slurm/PBS launchers) is not supported by Resolute"),
        ({"provider": "hpc"}, "provider: type hpc"),
        ({"type": "azure"}, "type: unknown provider type 'azure'; use aws or gcp"),
        ({"type": None}, "type: a provider needs a type: aws or gcp"),
        ({"min_instances": 1}, "type: a provider needs a type: aws or gcp"),
        ({"type": ["aws"]}, "type: unknown provider type ['aws']"),
        ({"aws": {**AWS_REQUIRED, "max_instances": 0}}, "aws.max_instances: Input should be"),
        ({"aws": {"max_instances": 1}, "max_instances": 2}, "aws.max_instances: 'max_instances' "),
        ({"gcp": {"zone": "z"}, "max_instances": 0}, "max_instances: Input should be"),
        ({"gcp": {"zone": "z"}}, "project: required off GCE"),
    ],
)
def test_parse_provider_refuses(data: dict[str, Any], message: str) -> None:
    errors = errors_of(data)
    assert any(e.startswith(message) for e in errors), errors


def test_parse_provider_refuses_a_non_mapping() -> None:
    assert errors_of("aws") == [  # type: ignore[arg-type]
        "(top level): a provider must be a mapping with type: aws or type: gcp"
    ]


def test_older_spellings_read_as_the_flat_form() -> None:
    inner = {k: v for k, v in AWS_REQUIRED.items() if k != "type"}
    nested = parse_provider({"aws": inner, "max_instances": 3})
    assert nested == parse_provider(aws(max_instances=3))
    gcp_inner = {k: v for k, v in GCP_REQUIRED.items() if k != "type"}
    assert parse_provider({"provider": "gcp", **gcp_inner}) == parse_provider(gcp())


# --- durations, secrets, immutability -----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("20m", timedelta(minutes=20)), ("1h30m", timedelta(minutes=90)), (90, timedelta(90 / 86400))],
)
def test_periods_read_go_durations_and_seconds(value: Any, expected: timedelta) -> None:
    config = parse_provider(
        aws(
            max_idle_agent_period=value, max_agent_starting_period=value, launch_error_timeout=value
        )
    )
    assert config.max_idle_agent_period == expected
    assert config.max_agent_starting_period == expected
    assert config.launch_error_timeout == expected
    gcp_config = parse_provider(gcp(operation_timeout_period=value))
    assert gcp_config.operation_timeout_period == expected  # type: ignore[union-attr]


def test_durations_print_as_go_durations() -> None:
    dumped = parse_provider(aws(max_idle_agent_period=90)).model_dump(mode="json")
    assert dumped["max_idle_agent_period"] == "1m30s"
    assert dumped["launch_error_timeout"] == "0s"


@pytest.mark.parametrize("base", [aws(), gcp()])
def test_scripts_are_hidden_when_printed(base: dict[str, Any]) -> None:
    config = parse_provider(
        {**base, "startup_script": "TOKEN=s3cret", "container_startup_script": "PW=hunter2"}
    )
    text = repr(config) + str(config) + str(config.model_dump(mode="json"))
    assert "s3cret" not in text
    assert "hunter2" not in text
    assert config.startup_script.get_secret_value() == "TOKEN=s3cret"
    assert config.container_startup_script.get_secret_value() == "PW=hunter2"


def test_configs_are_frozen() -> None:
    config = parse_provider(aws())
    with pytest.raises(ValidationError):
        config.max_instances = 9  # type: ignore[misc]


def test_agent_config_file_contents_takes_a_mapping_or_text() -> None:
    mapping = parse_provider(aws(agent_config_file_contents={"log": {"level": "debug"}}))
    assert mapping.agent_config_file_contents == {"log": {"level": "debug"}}
    text = parse_provider(aws(agent_config_file_contents="log:\n  level: debug\n"))
    assert text.agent_config_file_contents == "log:\n  level: debug\n"


def _models() -> list[type[BaseModel]]:
    return [
        AwsProviderConfig,
        AwsNetworkInterface,
        AwsTag,
        GcpProviderConfig,
        GcpNetworkInterface,
        GcpServiceAccount,
        GcpInstanceType,
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_every_field_is_described_and_models_forbid_extras(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") == "forbid"
    assert model.model_config.get("frozen") is True
    undocumented = [name for name, f in model.model_fields.items() if not f.description]
    assert undocumented == []


# --- master_url ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "url", "alias"),
    [
        (aws(), "http://10.0.0.5:8080", None),
        (aws(), "https://master.example.com", None),
        (aws(), "http://10.0.0.5:8080/", None),
        (aws(), "http://local-ipv4:8080", "local-ipv4"),
        (aws(), "http://public-ipv4:8080", "public-ipv4"),
        (aws(), "https://local-hostname:8443", "local-hostname"),
        (aws(), "http://public-hostname", "public-hostname"),
        (gcp(), "http://internal-ip:8080", "internal-ip"),
        (gcp(), "http://external-ip:8080", "external-ip"),
        (gcp(), "http://[::1]:8080", None),
    ],
)
def test_master_url_accepted(base: dict[str, Any], url: str, alias: str | None) -> None:
    config = parse_provider({**base, "master_url": url})
    assert config.master_url == url
    assert config.master_host_alias == alias


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, "http://127.0.0.1:8080"),
        ("http://10.0.0.5:9000", "http://10.0.0.5:9000"),
        ("http://10.0.0.5", "http://10.0.0.5:8080"),
        ("https://master.example.com", "https://master.example.com:8443"),
        ("http://local-ipv4:8080", "http://172.31.0.9:8080"),
        ("https://public-hostname", "https://ec2-1.compute.amazonaws.com:8443"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_resolve_master_url(url: str | None, expected: str) -> None:
    answers = {"local-ipv4": "172.31.0.9", "public-hostname": "ec2-1.compute.amazonaws.com"}
    config = parse_provider(aws(master_url=url))
    resolved = config.resolve_master_url(
        fallback="http://127.0.0.1:8080", lookup=answers.__getitem__
    )
    assert resolved == expected


def test_resolve_master_url_alias_needs_a_lookup() -> None:
    config = parse_provider(gcp(master_url="http://internal-ip:8080"))
    with pytest.raises(ValueError, match="alias 'internal-ip'"):
        config.resolve_master_url(fallback="http://127.0.0.1:8080")


# --- hypothesis: min/max and the spot price rule -------------------------------------------------


@given(st.integers(-5, 50), st.integers(-5, 50))
def test_min_max_rule(low: int, high: int) -> None:
    valid = low >= 0 and high > 0 and high >= low
    for base in (aws(), gcp()):
        try:
            config = parse_provider({**base, "min_instances": low, "max_instances": high})
        except ValidationError as exc:
            assert not valid
            keys = {e.split(":")[0] for e in format_config_errors(exc)}
            assert keys <= {"min_instances", "max_instances"}
        else:
            assert valid
            assert (config.min_instances, config.max_instances) == (low, high)


_PRICE_CHARS = st.text(alphabet="0123456789.", min_size=1, max_size=8)


@given(_PRICE_CHARS)
def test_price_of_digits_and_dots(price: str) -> None:
    valid = price.count(".") <= 1 and any(c.isdigit() for c in price)
    try:
        config = parse_provider(aws(spot=True, spot_max_price=price))
    except ValidationError as exc:
        assert not valid
        assert format_config_errors(exc)[0].startswith("spot_max_price: ")
    else:
        assert valid
        assert isinstance(config, AwsProviderConfig)
        assert config.spot_price_to_send == price


@given(st.text(min_size=1, max_size=8).filter(lambda s: not set(s) <= set("0123456789.")))
def test_price_with_other_characters_refused(price: str) -> None:
    if price == SPOT_PRICE_ON_DEMAND:
        return
    errors = errors_of(aws(spot_max_price=price))
    assert errors[0].startswith("spot_max_price: must be a price")


@given(st.decimals(min_value=0, max_value=100, places=3, allow_nan=False))
def test_yaml_number_prices_are_read_as_text(price: Any) -> None:
    config = parse_provider(aws(spot_max_price=float(price)))
    assert isinstance(config, AwsProviderConfig)
    assert config.spot_price_to_send is not None
    assert float(config.spot_price_to_send) == float(price)


# --- slots --------------------------------------------------------------------------------------

AWS_SLOTS = {
    "g4dn.xlarge": 1,
    "g4dn.2xlarge": 1,
    "g4dn.4xlarge": 1,
    "g4dn.8xlarge": 1,
    "g4dn.16xlarge": 1,
    "g4dn.12xlarge": 4,
    "g4dn.metal": 8,
    "g5.xlarge": 1,
    "g5.2xlarge": 1,
    "g5.4xlarge": 1,
    "g5.8xlarge": 1,
    "g5.16xlarge": 1,
    "g5.12xlarge": 4,
    "g5.24xlarge": 4,
    "g5.48xlarge": 8,
    "p2.xlarge": 1,
    "p2.8xlarge": 8,
    "p2.16xlarge": 16,
    "p3.2xlarge": 1,
    "p3.8xlarge": 4,
    "p3.16xlarge": 8,
    "p3dn.24xlarge": 8,
    "p4d.24xlarge": 8,
    "t2.micro": 0,
    "t3.medium": 0,
    "c4.large": 0,
    "c5.xlarge": 0,
    "c5d.2xlarge": 0,
    "c5n.18xlarge": 0,
    "m4.large": 0,
    "m5.large": 0,
    "m5d.xlarge": 0,
    "m5dn.large": 0,
    "m5n.24xlarge": 0,
    "m5zn.metal": 0,
    "m6i.32xlarge": 0,
}


@pytest.mark.parametrize(("instance_type", "slots"), AWS_SLOTS.items())
def test_aws_slot_table(instance_type: str, slots: int) -> None:
    assert aws_instance_type_slots(instance_type) == slots
    assert slots_per_instance(parse_provider(aws(instance_type=instance_type))) == slots
    cpu_ok = parse_provider(aws(instance_type=instance_type, cpu_slots_allowed=True))
    assert slots_per_instance(cpu_ok) == (slots or 1)


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "g6.xlarge", "t2.", "x1", "G4DN.metal"])
def test_unknown_aws_types_have_no_slots(instance_type: str) -> None:
    assert aws_instance_type_slots(instance_type) is None


@pytest.mark.parametrize(
    ("keys", "slots"),
    [
        ({"instance_type": "p5.48xlarge", "instance_slots": 8}, 8),
        ({"instance_type": "g4dn.metal", "instance_slots": 2}, 2),
        ({"instance_type": "r7i.large", "instance_slots": 0}, 0),
        ({"instance_type": "r7i.large", "instance_slots": 0, "cpu_slots_allowed": True}, 1),
    ],
)
def test_instance_slots_override(keys: dict[str, Any], slots: int) -> None:
    assert slots_per_instance(parse_provider(aws(**keys))) == slots


@pytest.mark.parametrize(
    ("data", "slots"),
    [
        pytest.param(aws(instance_type="p3.8xlarge", max_instances=5), 20, id="aws-table-4-gpus"),
        pytest.param(aws(instance_type="g4dn.xlarge"), 5, id="aws-default-max-instances-5"),
        pytest.param(aws(instance_type="p5.48xlarge", instance_slots=8, max_instances=3), 24,
                     id="aws-instance-slots"),
        pytest.param(aws(instance_type="c5.xlarge", max_instances=7), 0, id="aws-cpu-only"),
        pytest.param(aws(instance_type="c5.xlarge", max_instances=7, cpu_slots_allowed=True), 7,
                     id="aws-cpu-slots-allowed"),
        pytest.param(gcp(instance_type={"gpu_type": "nvidia-tesla-v100", "gpu_num": 8},
                         max_instances=2), 16, id="gcp-gpu-num"),
        pytest.param(gcp(instance_type={"gpu_type": "nvidia-tesla-t4", "gpu_num": 0},
                         max_instances=4, cpu_slots_allowed=True), 4, id="gcp-cpu-slots-allowed"),
    ],
)  # fmt: skip
def test_max_pool_slots(data: dict[str, Any], slots: int) -> None:
    assert max_pool_slots(parse_provider(data)) == slots


GCP_COUNTS = {
    "nvidia-tesla-t4": [0, 1, 2, 4],
    "nvidia-tesla-p100": [0, 1, 2, 4],
    "nvidia-tesla-p4": [0, 1, 2, 4],
    "nvidia-tesla-v100": [0, 1, 2, 4, 8],
    "nvidia-tesla-a100": [0, 1, 2, 4, 8, 16],
    "nvidia-a100-80gb": [0, 1, 2, 4, 8],
    "nvidia-l4": [0, 1, 2, 4, 8],
}


@pytest.mark.parametrize(("gpu_type", "counts"), GCP_COUNTS.items())
def test_gcp_gpu_counts(gpu_type: str, counts: list[int]) -> None:
    for num in range(18):
        data = gcp(instance_type={"gpu_type": gpu_type, "gpu_num": num})
        if num in counts:
            config = parse_provider(data)
            assert slots_per_instance(config) == num
            cpu_ok = parse_provider({**data, "cpu_slots_allowed": True})
            assert slots_per_instance(cpu_ok) == (num or 1)
        else:
            assert any(e.startswith("instance_type.gpu_num:") for e in errors_of(data))


def test_gcp_no_gpu_type_needs_no_gpus() -> None:
    config = parse_provider(gcp(instance_type={"gpu_type": "", "gpu_num": 0}))
    assert slots_per_instance(config) == 0
    assert errors_of(gcp(instance_type={"gpu_type": "", "gpu_num": 1})) == [
        "instance_type.gpu_type: unknown GPU type ''; use one of nvidia-tesla-t4, "
        "nvidia-tesla-p100, nvidia-tesla-p4, nvidia-tesla-v100, nvidia-tesla-a100, "
        "nvidia-a100-80gb, nvidia-l4"
    ]


@pytest.mark.parametrize(
    "machine_type",
    [
        "n1-standard-8",
        "n1-highmem-96",
        "n1-highcpu-16",
        "n1-ultramem-40",
        "m2-ultramem-208",
        "n1-megamem-96",
        "c2-standard-60",
        "a2-highgpu-1g",
        "a2-megagpu-16g",
        "a2-ultragpu-8g",
        "g2-standard-4",
        "n2-standard-32",
        "custom-8-32768",
    ],
)
def test_gcp_machine_types_accepted(machine_type: str) -> None:
    config = parse_provider(gcp(instance_type={"machine_type": machine_type}))
    assert config.instance_type.machine_type == machine_type  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("keys", "spot"),
    [({}, False), ({"spot": True}, True), ({"instance_type": {"preemptible": True}}, True)],
)
def test_gcp_is_spot(keys: dict[str, Any], spot: bool) -> None:
    assert parse_provider(gcp(**keys)).is_spot is spot  # type: ignore[union-attr]


def test_gcp_good_labels_and_tags() -> None:
    config = parse_provider(
        gcp(
            labels={"team": "ml", "cost_center": "", "env": "dev-1"},
            network_tags=["allow-ssh", "a"],
        )
    )
    assert isinstance(config, GcpProviderConfig)
    assert config.labels == {"team": "ml", "cost_center": "", "env": "dev-1"}
    assert config.network_tags == ("allow-ssh", "a")


# --- Determined's example pools ------------------------------------------------------------------

AWS_SPOT_POOL = """
type: aws
region: us-west-2
image_id: ami-0d4b8dbde3a2c2e3f
ssh_key_name: det-keypair
tag_key: managed-by
tag_value: det-master-1
instance_name: det-agent-spot
instance_type: p3.8xlarge
root_volume_size: 250
max_idle_agent_period: 10m
max_agent_starting_period: 20m
min_instances: 0
max_instances: 8
spot: true
spot_max_price: "1.50"
network_interface:
  public_ip: true
  subnet_id: subnet-0a1b2c3d
  security_group_id: sg-0a1b2c3d
iam_instance_profile_arn: arn:aws:iam::123456789012:instance-profile/det-agent
custom_tags:
  - key: team
    value: research
launch_error_timeout: 5m
launch_error_retries: 3
master_url: http://local-ipv4:8080
"""

GCP_T4_POOL = """
type: gcp
project: my-project
zone: us-west1-b
boot_disk_size: 200
boot_disk_source_image: projects/determined-ai/global/images/det-environments-0736b6d
label_key: managed-by
label_value: det-master
name_prefix: det-agent-
network_interface:
  network: projects/my-project/global/networks/det-net
  subnetwork: projects/my-project/regions/us-west1/subnetworks/det-subnet
  external_ip: false
network_tags: [det-agents]
service_account:
  email: det-agent@my-project.iam.gserviceaccount.com
instance_type:
  machine_type: n1-standard-16
  gpu_type: nvidia-tesla-t4
  gpu_num: 2
  preemptible: true
max_idle_agent_period: 30m
max_instances: 4
operation_timeout_period: 3m
master_url: http://internal-ip:8080
"""


def test_determined_aws_spot_pool() -> None:
    config = parse_provider(load_yaml(AWS_SPOT_POOL))
    assert isinstance(config, AwsProviderConfig)
    assert config.is_spot
    assert config.spot_price_to_send == "1.50"
    assert slots_per_instance(config) == 4
    assert config.max_idle_agent_period == timedelta(minutes=10)
    assert config.launch_error_timeout == timedelta(minutes=5)
    assert config.launch_error_retries == 3
    assert config.custom_tags == (AwsTag(key="team", value="research"),)
    assert config.network_interface.subnet_id == "subnet-0a1b2c3d"
    assert config.master_host_alias == "local-ipv4"
    assert (config.min_instances, config.max_instances) == (0, 8)


def test_determined_gcp_t4_pool() -> None:
    config = parse_provider(load_yaml(GCP_T4_POOL))
    assert isinstance(config, GcpProviderConfig)
    assert config.is_spot
    assert slots_per_instance(config) == 2
    assert config.boot_disk_type == "projects/my-project/zones/us-west1-b/diskTypes/pd-standard"
    assert config.service_account.scopes == ("https://www.googleapis.com/auth/cloud-platform",)
    assert config.operation_timeout_period == timedelta(minutes=3)
    assert config.network_tags == ("det-agents",)


def test_unquoted_yaml_price_reads_as_text() -> None:
    config = parse_provider(load_yaml(AWS_SPOT_POOL.replace('"1.50"', "0.75")))
    assert isinstance(config, AwsProviderConfig)
    assert config.spot_max_price == "0.75"


# --- pools of a master config: locations and fallback pools -------------------------------------


def _resources(*pools: dict[str, Any]) -> ResourcesConfig:
    return ResourcesConfig.model_validate({"resource_pools": [{"pool_name": "default"}, *pools]})


def test_pool_providers_by_name() -> None:
    resources = _resources(
        {"pool_name": "spot", "provider": aws(spot=True, fallback_pool="od")},
        {"pool_name": "od", "provider": gcp()},
    )
    providers = parse_pool_providers(resources)
    assert sorted(providers) == ["od", "spot"]
    assert isinstance(providers["spot"], AwsProviderConfig)
    assert providers["spot"].fallback_pool == "od"


def test_pool_provider_errors_are_located_under_their_pool() -> None:
    resources = _resources(
        {"pool_name": "a", "provider": aws(max_instances=0)},
        {"pool_name": "b", "provider": aws(fallback_pool="b")},
        {"pool_name": "c", "provider": gcp(fallback_pool="nowhere")},
        {"pool_name": "d", "provider": {"type": "hpc"}},
    )
    with pytest.raises(ValidationError) as info:
        parse_pool_providers(resources)
    assert format_config_errors(info.value) == [
        "resource_pools[1].provider.max_instances: Input should be greater than 0",
        "resource_pools[2].provider.fallback_pool: must name another pool, not this one",
        "resource_pools[3].provider.fallback_pool: pool 'nowhere' is not in resource_pools "
        "(defined: default, a, b, c, d)",
        "resource_pools[4].provider.type: type hpc (Slurm/PBS launchers) is not supported by "
        "Resolute; use aws or gcp",
    ]


def test_legacy_provisioner_errors_are_located_at_provisioner() -> None:
    resources = ResourcesConfig.from_master_config({"provisioner": aws(ssh_key_name="")})
    with pytest.raises(ValidationError) as info:
        parse_pool_providers(resources, legacy=True)
    assert format_config_errors(info.value) == [
        "provisioner.ssh_key_name: must not be empty: name an EC2 key pair"
    ]
