"""``streamdedup ui``: the local web inspector (``streamdedup.tools.ui``), over the same reader as
``streamdedup inspect``: a Kafka cluster's topics, or a file-mode output directory."""

from __future__ import annotations

import ipaddress

import click

from streamdedup._optional import require
from streamdedup.errors import InspectError
from streamdedup.cli._common import compile_notice, config_option, get_config, kafka_overrides, make_console
from streamdedup.cli.inspect import open_source

#: the kernels the pages call (fingerprints and the full comparison of the why-matched panel)
_UNITS = ("fingerprint", "explain", "evidence")


def _loopback(host: str) -> bool:
    """>>> _loopback("127.0.0.1"), _loopback("::1"), _loopback("localhost"), _loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command()
@config_option
@click.option("--output-dir", "--dir", "output_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="File mode: the run's output directory (without it: the Kafka topics of the config).")
@click.option("--input", "input_path", type=click.Path(dir_okay=False, exists=True), default=None,
              help="File mode: the run's input file (originals by line number, and the what-if's input).")
@click.option("--bootstrap-servers", default=None, help="Kafka: overrides kafka.bootstrap_servers.")
@click.option("--topic", default=None, help="Kafka: the duplicates topic (default kafka.duplicates_topic).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. The inspector has no login: keep it on the loopback unless the network is yours.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="TCP port to serve on")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also answer requests for this host name (repeatable; a name in front of it, such as a proxy's). "
                   "It answers the loopback's names and the --host address; other Host headers get a 400.")
@click.option("--page-size", type=click.IntRange(1, 1000), default=25, show_default=True, help="Duplicates per list page.")
@click.option("--scan", "max_scan", type=click.IntRange(100, None), default=10_000, show_default=True,
              help="Records read at most for one list or search page (the 'older' link goes on from there).")
@click.option("--lookup-window", type=click.IntRange(1, None), default=10_000, show_default=True,
              help="Kafka: records per partition searched for an original that has no position tag (older records).")
def ui(config_path, output_dir, input_path, bootstrap_servers, topic, host, port, allow_hosts, page_size, max_scan,
       lookup_window) -> None:
    """A local web inspector: an overview in charts, recent duplicates, clusters, each pair side by
    side with its word diff and why it matched, search by id, and a what-if replay of thresholds.

    The overview (its first page) draws the duplicate rate over time, the relations, the
    similarity of the duplicates against the thresholds, dead letters by stage and the largest
    clusters, from the newest records of each output."""
    for module in ("starlette", "jinja2", "uvicorn"):
        require(module, "ui", "streamdedup ui")
    import uvicorn

    from streamdedup.sketch.fingerprint import Fingerprinter
    from streamdedup.warmup.fill import fill
    from streamdedup.tools.ui.app import Inspector, create_app
    from streamdedup.tools.ui.guard import allowed_hosts
    from streamdedup.tools.ui.whatif_form import WhatIfInput

    cfg = kafka_overrides(get_config(config_path), bootstrap_servers, ())
    try:
        source = open_source(cfg, output_dir, input_path, topic, lookup_window)
    except InspectError as exc:
        raise click.ClickException(str(exc)) from None
    console = make_console()
    try:
        fill(cfg, _UNITS, announce=compile_notice)
        if output_dir is not None:
            label, whatif = f"file mode: {output_dir}", WhatIfInput(input_path, ())
        else:
            label = f"{topic or cfg.kafka.duplicates_topic} @ {cfg.kafka.bootstrap_servers}"
            whatif = WhatIfInput(None, tuple(cfg.kafka.input_topics))
        inspector = Inspector(cfg, source, label, whatif, page_size, max_scan, fp=Fingerprinter(cfg.fingerprint))
        if not _loopback(host):
            console.print(f"listening on {host}: anyone who reaches it reads the records (there is no login)", style="yellow")
        api, relay = _query_api(cfg, output_dir is None)
        if relay is not None:
            console.print(f"POST /api/query relays queries to {cfg.kafka.queries.topic} (bearer token: kafka.queries.http_token)")
        console.print(f"streamdedup ui on http://{host}:{port}/ ({label}); Ctrl-C stops it")
        try:
            uvicorn.run(create_app(inspector, allowed_hosts(host, allow_hosts), api=api), host=host, port=port,
                        log_level="warning")
        finally:
            if relay is not None:
                relay.close()
    finally:
        source.close()


def _query_api(cfg, kafka: bool) -> tuple[list, object]:
    """``POST /api/query`` and its relay, when queries and their HTTP token are configured (Kafka mode)."""
    token = cfg.kafka.queries.http_token.get_secret_value()
    if not (kafka and cfg.kafka.queries.topic and token):
        return [], None
    from streamdedup.tools.ui.query_api import QueryRelay, query_route

    relay = QueryRelay(cfg)
    return [query_route(relay, token)], relay
