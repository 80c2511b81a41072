"""Apply the automations of infra/automations.yaml to the Prefect server of PREFECT_API_URL, sending their
notifications to one notification block.

    .venv/bin/python infra/scripts/apply-automations.py --webhook-url URL   # keeps the block custom-webhook/vhd-alerts
    .venv/bin/python infra/scripts/apply-automations.py --block TYPE/NAME   # a notification block you made (UI: Blocks)
    .venv/bin/python infra/scripts/apply-automations.py                     # again, to the block they notify now

--webhook-url (or $VHD_ALERT_WEBHOOK_URL) is any URL that takes a JSON POST: a Slack or Mattermost incoming webhook
reads its "text", which holds the subject and the body; the URL is kept in the block's secrets. --block (or
$VHD_ALERT_BLOCK) names any notification block on the server, e.g. slack-webhook/ops, ms-teams-webhook/data or
sendgrid-email/oncall. Each automation is created, or updated in place when one of its name exists, so running the
script again after editing the file changes the automations instead of doubling them. Exits 1 with one line when the
server or the block cannot be had.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

AUTOMATIONS = Path(__file__).resolve().parents[1] / "automations.yaml"
WEBHOOK_BLOCK = "custom-webhook/vhd-alerts"  # the block this script keeps for --webhook-url


class SetupError(Exception):
    """What stops the automations from being applied, in one line."""


def read_specs(path: Path) -> list[dict]:
    """The automations of the file (the list under `automations:`), as data."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise SetupError(f"cannot read {path}: {error}") from None
    specs = data.get("automations") if isinstance(data, dict) else None
    if not specs or not all(isinstance(spec, dict) for spec in specs):
        raise SetupError(f"{path} has no automations (a list under `automations:`)")
    return specs


def load_automations(specs: list[dict], path: Path, block_document_id) -> list:
    """The file's automations as Prefect models, every send-notification action sent to the block."""
    from prefect.events.schemas.automations import AutomationCore
    from pydantic import ValidationError

    automations = []
    for spec in specs:
        for action in spec.get("actions", []):
            if action.get("type") == "send-notification":
                action["block_document_id"] = str(block_document_id)
        try:
            automations.append(AutomationCore.model_validate(spec))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise SetupError(f"{spec.get('name', 'an automation')} in {path} is not a valid automation: {where}: "
                             f"{first['msg']}") from None
    return automations


def webhook_block(url: str):
    """The Custom Webhook block of --webhook-url: a JSON POST whose "text" is the subject and the body."""
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    if not url.startswith(("https://", "http://")):
        raise SetupError(f"the webhook URL must start with https:// or http://, not {url[:30]!r}")
    return CustomWebhookNotificationBlock(name=WEBHOOK_BLOCK.split("/")[1], url="{{webhook_url}}",
                                          json_data={"text": "{{subject}}\n\n{{body}}"},
                                          secrets={"webhook_url": url})


def resolve_block(client, webhook_url: str | None, block: str | None, names: list[str]) -> tuple[str, object]:
    """(TYPE/NAME, id) of the notification block the automations send to: the webhook's, the named one, or else the
    one that the file's automations already on the server notify."""
    from prefect.exceptions import ObjectNotFound

    if webhook_url:
        return WEBHOOK_BLOCK, webhook_block(webhook_url).save(WEBHOOK_BLOCK.split("/")[1], overwrite=True)
    if block:
        slug, _, name = block.partition("/")
        if not slug or not name:
            raise SetupError(f"name the block as TYPE/NAME, e.g. slack-webhook/ops, not {block!r}")
        try:
            return block, client.read_block_document_by_name(name, block_type_slug=slug).id
        except ObjectNotFound:
            raise SetupError(f"no block {block} on this Prefect server; create it in the UI (Blocks), or give "
                             "--webhook-url URL") from None
    for name in names:
        for automation in client.read_automations_by_name(name):
            for action in automation.actions:
                if action.type == "send-notification":
                    try:
                        document = client.read_block_document(action.block_document_id)
                    except ObjectNotFound:
                        continue  # that block was deleted since
                    return f"{document.block_type.slug}/{document.name}", document.id
    raise SetupError("say where notifications go: --webhook-url URL (a Slack, Mattermost or other JSON webhook) or "
                     "--block TYPE/NAME (a notification block on the server, e.g. slack-webhook/ops)")


def apply(client, automations: list) -> list[tuple[str, str, object]]:
    """Create each automation, or update the one of its name (removing any duplicates of that name)."""
    applied = []
    for automation in automations:
        existing = client.read_automations_by_name(automation.name)
        if existing:
            client.update_automation(existing[0].id, automation)
            for duplicate in existing[1:]:
                client.delete_automation(duplicate.id)
            applied.append(("updated", automation.name, existing[0].id))
        else:
            applied.append(("created", automation.name, client.create_automation(automation)))
    return applied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--webhook-url", default=os.environ.get("VHD_ALERT_WEBHOOK_URL") or None,
                       help="a URL that takes a JSON POST (default $VHD_ALERT_WEBHOOK_URL)")
    where.add_argument("--block", default=os.environ.get("VHD_ALERT_BLOCK") or None,
                       help="a notification block on the server, TYPE/NAME (default $VHD_ALERT_BLOCK)")
    parser.add_argument("--file", type=Path, default=AUTOMATIONS, help=f"the automations (default {AUTOMATIONS})")
    args = parser.parse_args(argv)
    if args.webhook_url and args.block:
        parser.error("give either a webhook URL or a block, not both (check $VHD_ALERT_WEBHOOK_URL/$VHD_ALERT_BLOCK)")

    import httpx
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    try:
        if not url:
            raise SetupError("PREFECT_API_URL is unset: point it at the Prefect server that runs the nightly, e.g. "
                             "export PREFECT_API_URL=http://127.0.0.1:4200/api")
        with get_client(sync_client=True) as client:
            if client.api_healthcheck() is not None:
                raise SetupError(f"the Prefect server at {url} is not reachable; start it (prefect server start) or "
                                 "fix PREFECT_API_URL")
            specs = read_specs(args.file)
            block, block_id = resolve_block(client, args.webhook_url, args.block, [s.get("name") for s in specs])
            applied = apply(client, load_automations(specs, args.file, block_id))
    except SetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except httpx.HTTPError as error:  # the server went away, or refused a request
        print(f"error: the Prefect server at {url} failed a request: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    for verb, name, automation_id in applied:
        print(f"{verb} automation {name} ({automation_id}): notifications to block {block}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
