"""`approval ...` and `service ...`: approvals bound to effect keys, detached services."""

from __future__ import annotations

from typing import Any

import click

from shiftgit import textsafe
from shiftgit.cli.common import COMMAND, Finite, command_argv, emit, json_option, resolve, run_option
from shiftgit.cli.common import store as _store


@click.group()
def approval() -> None:
    """Approvals for effects, addressed by the effect key they are for (never by a position).

    \b
    Example:
      shiftgit approval request migrate-0042 --reason "adds a NOT NULL column"
      shiftgit approval grant migrate-0042 --by dba@example.com --expires-in 60
    """


@approval.command("request")
@click.argument("key")
@click.option("--reason", required=True, help="Why the effect is needed.")
@run_option
@json_option
def approval_request(key: str, reason: str, run: str | None, as_json: bool) -> None:
    """Ask for approval of the effect KEY (then `shiftgit stop --reason waiting_for_approval` while waiting).

    \b
    Example:
      shiftgit approval request notify-customers --reason "tell users about the outage"
    """
    from shiftgit.effects import approvals
    from shiftgit.runs.lease import fenced

    store = _store()
    record = approvals.request(store, fenced(store, resolve(store, run)), key, reason)
    _approval_out(record, as_json)


@approval.command("grant")
@click.argument("key")
@click.option("--by", required=True, help="Who grants it.")
@click.option("--expires-in", "expires_in", type=Finite(min=0, min_open=True), metavar="MINUTES",
              help="The grant lapses after this many minutes.")
@run_option
@json_option
def approval_grant(key: str, by: str, expires_in: float | None, run: str | None, as_json: bool) -> None:
    """Grant a requested approval (a human, from their own shell; refused inside an agent session).

    \b
    Example:
      shiftgit approval grant notify-customers --by lead@example.com --expires-in 30
    """
    import os

    from shiftgit.effects import approvals
    from shiftgit.runs.lease import fenced

    store = _store()
    record = approvals.grant(store, fenced(store, resolve(store, run)), key, by, expires_in, environ=os.environ)
    _approval_out(record, as_json)


@approval.command("deny")
@click.argument("key")
@click.option("--by", required=True, help="Who denies it.")
@click.option("--reason", required=True, help="Why.")
@run_option
@json_option
def approval_deny(key: str, by: str, reason: str, run: str | None, as_json: bool) -> None:
    """Deny a requested approval, or revoke a granted one.

    \b
    Example:
      shiftgit approval deny migrate-0042 --by dba@example.com --reason "run it after the freeze"
    """
    import os

    from shiftgit.effects import approvals
    from shiftgit.runs.lease import fenced

    store = _store()
    record = approvals.deny(store, fenced(store, resolve(store, run)), key, by, reason, environ=os.environ)
    _approval_out(record, as_json)


@approval.command("list")
@run_option
@json_option
def approval_list(run: str | None, as_json: bool) -> None:
    """Every approval of the run with its state now (a lapsed grant shows as expired).

    \b
    Example:
      shiftgit approval list
    """
    from shiftgit.effects import approvals

    store = _store()
    rows = [approvals.view(a) for a in store.read(resolve(store, run)).approvals]
    if as_json:
        emit(rows)
        return
    for row in rows:
        line = f"{row['key']:<24} {row['state']:<9} {row.get('by') or ''}  {row.get('reason') or ''}".rstrip()
        click.echo(textsafe.one_line(line))
    if not rows:
        click.echo("no approvals")


def _approval_out(record: Any, as_json: bool) -> None:
    from shiftgit.effects import approvals

    row = approvals.view(record)
    if as_json:
        emit(row)
        return
    by = f" by {row['by']}" if row.get("by") and row["state"] != "requested" else ""
    until = f" until {row['expires_at']}" if row.get("expires_at") and row["state"] == "granted" else ""
    click.echo(f"approval {row['key']!r}: {row['state']}{by}{until}")


@click.group()
def service() -> None:
    """Long-running processes started detached and recorded as effects (kind `service`).

    \b
    Example:
      shiftgit service start --name web --port 8000 -- python -m http.server 8000
      shiftgit service stop --name web
    """


@service.command("start", context_settings=COMMAND)
@click.option("--name", required=True, help="The service's name (its effect key is service:NAME).")
@click.option("--port", type=int, help="The port it listens on (a later process checks it accepts connections).")
@click.option("--cwd", default=".", show_default=True, help="Directory to run in, relative to the repo root.")
@run_option
@json_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def service_start(name: str, port: int | None, cwd: str, run: str | None, as_json: bool,
                  command: tuple[str, ...]) -> None:
    """Start CMD detached (own session, stdio to a log in the git dir), record it; prints the pid.

    \b
    Example:
      shiftgit service start --name web --port 8000 -- python -m http.server 8000
    """
    from shiftgit.effects import services

    store = _store()
    argv = command_argv(command, "service start")
    run_id = resolve(store, run)
    from shiftgit.runs.lease import guard

    guard(store, run_id)  # a fenced process never starts a service (exit 4)
    record, warnings = services.start(store, run_id, name, argv, port=port, cwd=cwd)
    for warning in warnings:
        click.echo(f"shiftgit: warning: {warning}", err=True)
    if as_json:
        emit(services.service_view(record))
        return
    click.echo(record.pid)
    click.echo(f"shiftgit: service {name!r} started, pid {record.pid}; log {record.log}", err=True)


@service.command("stop")
@click.option("--name", required=True)
@run_option
@json_option
def service_stop(name: str, run: str | None, as_json: bool) -> None:
    """Stop a recorded service (SIGTERM its process group, then SIGKILL) and record it as compensated.

    \b
    Example:
      shiftgit service stop --name web
    """
    from shiftgit.effects import services

    store = _store()
    record = services.stop(store, resolve(store, run), name)
    emit(services.service_view(record)) if as_json else click.echo(f"service {name!r}: {record.result}")


@service.command("list")
@run_option
@json_option
def service_list(run: str | None, as_json: bool) -> None:
    """Recorded services and whether each is alive (its process runs and its port accepts connections).

    \b
    Example:
      shiftgit service list --json
    """
    from shiftgit.effects import services

    store = _store()
    rows = services.services(store.read(resolve(store, run)))
    if as_json:
        emit(rows)
        return
    for row in rows:
        port = f" port {row['port']}" if row.get("port") else ""
        state = ("alive" if row["alive"] else "not alive") if row["alive"] is not None else \
            f"unknown (recorded on host {textsafe.quote(str(row['host']))}, not this one)"
        click.echo(f"{row['name']:<20} pid {row['pid']}{port} {state}")
    if not rows:
        click.echo("no services")
