"""Composition root: `create_app(settings)` builds the master's Litestar application."""

from __future__ import annotations

import gc
import logging
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import httpx
from litestar import Litestar
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.plugins.pydantic import PydanticPlugin

from controlplane.api import (
    agent_slots,
    agents,
    all_gather,
    allocation_info,
    audit,
    checkpoint_gc,
    checkpoint_metadata,
    checkpoints,
    cluster_message,
    commands,
    config_policies,
    experiment_deletion,
    experiment_files,
    experiment_labels,
    experiment_search,
    experiments,
    generic_tasks,
    health,
    interactive,
    interactive_pages,
    jobs,
    kubernetes,
    log_fields,
    log_retention,
    master,
    master_logs,
    metric_streams,
    models,
    notebook_idle,
    project_extras,
    project_metric_ranges,
    projects,
    proxy,
    proxy_origin,
    proxy_upstream,
    rbac,
    rendezvous,
    resource_pools,
    runs,
    search_preview,
    security_headers,
    tasks,
    templates,
    tokens,
    trial_metrics,
    trial_profiler,
    trial_series,
    trial_sources,
    trials,
    unmanaged,
    usage,
    user_preferences,
    users,
    webhooks,
    webui,
    workspace_pools,
    workspaces,
)
from controlplane.api.body_guard import GuardedRequest
from controlplane.api.deps import (
    ApiContext,
    provide_ctx,
    provide_principal,
    provide_session,
    utc_now,
)
from controlplane.api.errors import HANDLERS, document_errors
from controlplane.api.login_guard import LoginGuard
from controlplane.config import LoginThrottleSettings, MasterSettings
from controlplane.db.session import make_engine, make_sessionmaker, transaction, upgrade
from controlplane.services.bootstrap import bootstrap
from controlplane.services.experiments import ExperimentDefaults
from controlplane.services.interactive import InteractiveDefaults
from controlplane.services.interactive_idle import IdleWatcher
from controlplane.services.login_throttle import LoginThrottle
from controlplane.services.master_log import LogRing
from controlplane.services.periodic_jobs import PeriodicJobs
from controlplane.services.provisioning.loop import (
    ProvisionerFactory,
    Provisioning,
    master_url_fallback,
    tls_factory,
)
from controlplane.services.scheduling.pools import Scheduling
from controlplane.services.webhook_shipper import WebhookShipper

log = logging.getLogger("controlplane")

API_VERSION = "0.38.1"  # the Determined API we implement; the real client compares against it
RESOLUTE_VERSION = "0.1.0"


def _public_config(settings: MasterSettings) -> dict[str, object]:
    data = settings.model_dump(mode="json", exclude={"security"})
    if settings.db.url:
        data["db"]["url"] = "<set>"
    return data


def create_app(
    settings: MasterSettings,
    *,
    clock: Callable[[], datetime] = utc_now,
    announce: Callable[[str], None] | None = None,
    provisioner_factory: ProvisionerFactory | None = None,
) -> Litestar:
    """Build the app; the lifespan migrates the DB and creates first-start users and defaults."""
    say = announce or (lambda text: print(text, file=sys.stderr, flush=True))

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        # The master's own log for `det master logs`, from the first line on, and off again
        # however the start or the run ends.
        ring = LogRing()
        logging.getLogger().addHandler(ring)
        app.state[master_logs.RING] = ring
        try:
            async with serve(app):
                yield
        finally:
            logging.getLogger().removeHandler(ring)

    @asynccontextmanager
    async def serve(app: Litestar) -> AsyncIterator[None]:
        url = settings.database_url
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        await upgrade(url)
        engine = make_engine(url, pool_size=settings.db.pool_size, echo=settings.db.echo)
        factory = make_sessionmaker(engine)
        password = settings.security.initial_user_password
        async with transaction(factory) as session:
            result = await bootstrap(
                session,
                initial_password=password.get_secret_value() if password is not None else None,
                allow_empty=settings.security.allow_empty_passwords,
                cluster_id=settings.cluster_id,
                now=clock(),
            )
        settings.prepare_default_checkpoint_dir(result.cluster_id)
        if result.generated_password:
            say(
                "\n=== Resolute: first start ===\n"
                "No security.initial_user_password was set, so the users 'admin' and 'determined'\n"
                f"were given this generated password (shown only now, stored only hashed):\n\n"
                f"    {result.generated_password}\n\n"
                "Log in with `det user login admin`;"
                " change it with `det user change-password`.\n"
            )
        resources = settings.resources
        for note in resources.deprecation_notes():
            log.warning("%s", note)
        scheduling = Scheduling(
            resources,
            factory,
            clock,
            interval_s=settings.scheduling_interval_s,
            launch_error=settings.launch_error,
            heartbeat_interval_s=settings.agent_heartbeat_interval_s,
            liveness_timeout_s=settings.agent_liveness_timeout_s,
            default_task_user=settings.security.default_task_user.policy(),
        )
        provisioning = Provisioning(
            settings.providers,
            scheduling,
            factory,
            clock,
            master_url=master_url_fallback(
                settings.host, settings.port, tls=settings.security.tls.enabled
            ),
            interval_s=settings.provisioner_interval_s,
            **_provisioner_factory(settings, provisioner_factory),
        )
        periodic = PeriodicJobs(
            factory,
            clock,
            default_storage=settings.default_checkpoint_storage,
            gc_interval_s=settings.checkpoint_gc_interval_s,
            log_retention_days=settings.retention_policy.log_retention_days,
            retention_schedule=settings.retention_policy.schedule,
        )
        app.state["api"] = ApiContext(
            sessionmaker=factory,
            clock=clock,
            version=API_VERSION,
            cluster_id=result.cluster_id,
            master_id=str(uuid.uuid4()),
            cluster_name=settings.cluster_name,
            token_lifetime=timedelta(seconds=settings.security.token_lifetime_s),
            allow_empty_passwords=settings.security.allow_empty_passwords,
            experiment_defaults=ExperimentDefaults(
                checkpoint_storage=settings.default_checkpoint_storage,
                pools=scheduling,
            ),
            public_config=_public_config(settings),
            scheduling=scheduling,
            provisioning=provisioning,
            interactive=InteractiveDefaults(
                notebook_timeout_s=settings.notebook_timeout,
                tensorboard_timeout_s=settings.tensorboard_timeout,
            ),
            periodic=periodic,
            tls=settings.security.tls.enabled,
            login_guard=_login_guard(settings.security.login_throttle),
            rbac=settings.security.authz.type == "rbac",
        )
        # The idle check's client, and the proxy's pool (no read timeout: long polls, event
        # streams); neither uses the environment's HTTP proxy (services are on agents).
        proxy_client = httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, read=None),
            trust_env=False,
            limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200),
        )
        app.state["proxy_client"] = proxy_client
        proxy_pool = proxy_upstream.Pool()
        app.state["proxy_pool"] = proxy_pool
        app.state["proxy_activity"] = proxy.ActivityBoard()
        app.state["proxy_targets"] = proxy.TargetCache()
        app.state["proxy_tickets"] = proxy_origin.TicketBook()
        app.state["proxy_domain"] = settings.http.proxy_domain
        idle = IdleWatcher(
            factory,
            clock,
            app.state["proxy_activity"],
            proxy_client,
            scheduling.poke,
            settings.interactive_idle_check_s,
        )
        key = settings.webhooks.signing_key
        shipper = WebhookShipper(
            factory,
            clock,
            base_url=settings.webhooks.base_url,
            signing_key=key.get_secret_value().encode() if key is not None else None,
            sweep_s=settings.webhooks.sweep_s,
        )
        app.state[webhooks.SHIPPER] = shipper
        await scheduling.start()
        await provisioning.start()
        await periodic.start()
        await shipper.start()
        idle.start()
        log.info("master ready on %s (database %s)", settings.port, engine.dialect.name)
        # Start-up objects (routes, models, settings) live forever: move them out of the
        # collector's view, so full collections stop rescanning them (they cost ~90 ms each).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await idle.stop()
            await shipper.stop()
            await proxy_client.aclose()
            await periodic.stop()
            proxy_pool.close()
            await provisioning.stop()
            await scheduling.stop()
            await engine.dispose()

    routes = [
        *master.ROUTES,
        *health.ROUTES,
        *master_logs.ROUTES,
        *cluster_message.ROUTES,
        *kubernetes.ROUTES,
        *config_policies.ROUTES,
        *log_retention.ROUTES,
        *log_fields.ROUTES,
        *agents.ROUTES,
        *agent_slots.ROUTES,
        *jobs.ROUTES,
        *resource_pools.ROUTES,
        *users.ROUTES,
        *tokens.ROUTES,
        *user_preferences.ROUTES,
        *experiments.ROUTES,
        *experiment_search.ROUTES,
        *runs.ROUTES,
        *experiment_files.ROUTES,
        *metric_streams.ROUTES,
        *search_preview.ROUTES,
        *experiment_labels.ROUTES,
        *experiment_deletion.ROUTES,
        *trials.ROUTES,
        *unmanaged.ROUTES,
        *trial_series.ROUTES,
        *trial_metrics.ROUTES,
        *trial_profiler.ROUTES,
        *trial_sources.ROUTES,
        *checkpoints.ROUTES,
        *checkpoint_gc.ROUTES,
        *checkpoint_metadata.ROUTES,
        *tasks.ROUTES,
        *rendezvous.ROUTES,
        *all_gather.ROUTES,
        *allocation_info.ROUTES,
        *commands.ROUTES,
        *generic_tasks.ROUTES,
        *templates.ROUTES,
        *workspaces.ROUTES,
        *project_extras.ROUTES,
        *workspace_pools.ROUTES,
        *rbac.ROUTES,
        *audit.ROUTES,
        *interactive.ROUTES,
        *notebook_idle.ROUTES,
        *interactive_pages.ROUTES,
        *proxy.ROUTES,
        *projects.ROUTES,
        *project_metric_ranges.ROUTES,
        *models.ROUTES,
        *usage.ROUTES,
        *webhooks.ROUTES,
        *webui.ROUTES,
    ]
    document_errors(routes)
    return _Master(
        route_handlers=routes,
        lifespan=[lifespan],
        dependencies={
            "db": Provide(provide_session),
            "principal": Provide(provide_principal),
            "ctx": Provide(provide_ctx, sync_to_thread=False),
        },
        exception_handlers=HANDLERS,  # type: ignore[arg-type]
        plugins=[PydanticPlugin(prefer_alias=True)],
        request_max_body_size=settings.http.max_request_body_bytes,
        request_class=GuardedRequest,  # JSON bodies: UTF-8 and a nesting limit, checked first
        openapi_config=OpenAPIConfig(
            title="Resolute master", version=RESOLUTE_VERSION, path="/api/v1/openapi"
        ),
        debug=False,
    )


class _Master(Litestar):
    """The master's ASGI app: Litestar, except that `/proxy/…` goes straight to the proxy.
    Proxied requests are most of an open notebook's traffic, and on a small machine the proxy
    shares the CPU with the service behind it; the router, its exception layer and the scope
    copy were a tenth of the proxy's cost and do nothing for it (it answers its own errors)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan" and scope["path"].startswith(proxy.PREFIX):
            scope["app"] = scope["litestar_app"] = self
            await proxy.serve(scope, receive, send)
            return
        if scope["type"] != "lifespan" and proxy.task_origin_of(scope, self.state):
            # A task's own origin serves that task's /proxy/… alone: never the API or the UI.
            scope["app"] = scope["litestar_app"] = self
            await proxy.not_here(scope, receive, send)
            return
        # Every other response gets its security headers here, 404s and errors included.
        await super().__call__(scope, receive, security_headers.with_headers(scope, send))


def _provisioner_factory(
    settings: MasterSettings, given: ProvisionerFactory | None
) -> dict[str, ProvisionerFactory]:
    """A given factory (tests), else for an HTTPS master one handing agents its certificate."""
    if given is not None:
        return {"factory": given}
    cert = settings.security.tls.cert
    if cert is None:
        return {}
    return {"factory": tls_factory(cert.expanduser().read_text())}


def _login_guard(throttle: LoginThrottleSettings) -> LoginGuard | None:
    """The login throttle of this master process (docs/security.md); None when disabled."""
    if not throttle.enabled:
        return None
    return LoginGuard(
        LoginThrottle(throttle.policy(), max_keys=throttle.max_tracked),
        trusted_proxies=tuple(throttle.trusted_proxies),
        refusal_delay_s=throttle.refusal_delay_s,
    )
