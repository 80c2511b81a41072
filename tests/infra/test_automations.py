"""The nightly's automations (infra/automations.yaml), applied the way the README says, read back through the API of
the test session's real Prefect server, then fired for real: a failed nightly and an overdue one notify a webhook
served here on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "infra" / "scripts" / "apply-automations.py"
FILE = yaml.safe_load((ROOT / "infra" / "automations.yaml").read_text())["automations"]
NAMES = [a["name"] for a in FILE]


class Webhook:
    """An HTTP endpoint on a free loopback port that keeps the JSON bodies POSTed to it."""

    def __init__(self):
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, words: str, timeout: float = 90.0) -> str:
        """The text of the first notification containing `words` (the server fires automations from events)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for body in list(self.received):
                if words in body["text"]:
                    return body["text"]
            time.sleep(0.5)
        raise AssertionError(f"no notification with {words!r} in {timeout} s; received {self.received}")


def apply_automations(*args: str) -> subprocess.CompletedProcess:
    """The README's command, run as a user runs it (PREFECT_API_URL names the session's server)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VHD_ALERT_")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def read_automations(name: str) -> list:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_automations_by_name(name)


@pytest.fixture(scope="module")
def webhook(prefect_server):
    """The webhook, and at the end no automation of ours left on the session's server (other tests run nightlies)."""
    hook = Webhook()
    yield hook
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for automation in client.read_automations():
            if automation.name.startswith(("vhd-nightly-", "test-vhd-nightly-")):
                client.delete_automation(automation.id)
    hook.server.shutdown()


def test_applied_automations_read_back_as_the_file_says_and_reapplying_updates_them(webhook):
    from prefect.client.orchestration import get_client

    nowhere = apply_automations()  # before any block exists: it says where notifications can go
    assert nowhere.returncode == 1 and nowhere.stdout == ""
    assert nowhere.stderr.startswith("error: say where notifications go: --webhook-url URL") and \
        nowhere.stderr.count("\n") == 1
    missing = apply_automations("--block", "slack-webhook/nobody")
    assert missing.returncode == 1 and "no block slack-webhook/nobody on this Prefect server" in missing.stderr
    assert "Traceback" not in nowhere.stderr + missing.stderr and not read_automations(NAMES[0])

    applied = apply_automations("--webhook-url", webhook.url)
    assert applied.returncode == 0, applied.stderr
    assert [line.split(" (")[0] for line in applied.stdout.splitlines()] == [f"created automation {n}" for n in NAMES]
    with get_client(sync_client=True) as client:
        block = client.read_block_document_by_name("vhd-alerts", block_type_slug="custom-webhook")
    automations = {name: read_automations(name) for name in NAMES}
    assert all(len(found) == 1 for found in automations.values()), automations
    failed, overdue = automations["vhd-nightly-failed"][0], automations["vhd-nightly-overdue"][0]

    for automation in (failed, overdue):
        trigger = automation.trigger
        assert automation.enabled and trigger.threshold == 1
        assert trigger.match.model_dump() == {"prefect.resource.id": "prefect.flow-run.*"}
        assert trigger.match_related.model_dump() == {"prefect.resource.role": "flow",
                                                      "prefect.resource.name": "nightly"}
        (action,) = automation.actions
        assert action.type == "send-notification" and action.block_document_id == block.id
    assert failed.trigger.posture == "Reactive" and failed.trigger.within == dt.timedelta(0)
    assert failed.trigger.expect == {"prefect.flow-run.Failed", "prefect.flow-run.Crashed"}
    assert overdue.trigger.posture == "Proactive" and overdue.trigger.within == dt.timedelta(hours=26)
    assert overdue.trigger.after == overdue.trigger.expect == {"prefect.flow-run.Completed"}
    assert "{{ flow_run.name }}" in failed.actions[0].subject

    # a notification block of the user's own (made in the UI, here in code), then again with no destination given:
    # the same automations are updated, and keep notifying the block they notify
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    own = CustomWebhookNotificationBlock(name="ops", url=webhook.url, json_data={"text": "{{subject}} {{body}}"})
    own_id = own.save("test-ops", overwrite=True)
    for args in (("--block", "custom-webhook/test-ops"), ()):
        again = apply_automations(*args)
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines() == [f"updated automation {name} ({found[0].id}): notifications to block "
                                             "custom-webhook/test-ops" for name, found in automations.items()]
        assert {name: [(a.id, a.actions[0].block_document_id) for a in read_automations(name)] for name in NAMES} \
            == {name: [(found[0].id, own_id)] for name, found in automations.items()}  # not new automations


def test_a_failed_nightly_notifies_the_webhook(webhook, tmp_path):
    from flows.nightly import nightly

    if not read_automations("vhd-nightly-failed"):
        assert apply_automations("--webhook-url", webhook.url).returncode == 0
    # the night's date is taken in an unknown time zone: the run fails before it generates anything
    state = nightly(count=1, warehouse=str(tmp_path / "wh"), timezone="Mars/Olympus", return_state=True)
    assert state.is_failed()
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
    text = webhook.wait_for(f"nightly run {run.name} ended Failed")
    assert str(run.id) in text and "unknown time zone 'Mars/Olympus'" in text


def test_a_nightly_overdue_after_its_last_completion_notifies_the_webhook(webhook, tmp_path):
    """The overdue automation of the file with its 26 hours cut to 10 s (the shortest a proactive trigger takes)."""
    from flows.nightly import nightly

    specs = yaml.safe_load((ROOT / "infra" / "automations.yaml").read_text())
    (overdue,) = [a for a in specs["automations"] if a["name"] == "vhd-nightly-overdue"]
    overdue.update(name="test-vhd-nightly-overdue", trigger={**overdue["trigger"], "within": 10})
    short = tmp_path / "automations.yaml"
    short.write_text(yaml.safe_dump({"automations": [overdue]}))
    assert apply_automations("--file", str(short), "--webhook-url", webhook.url).returncode == 0

    state = nightly(count=1, families="lp", warehouse=str(tmp_path / "wh"), date="2026-05-06", workers=1,
                    return_state=True)
    assert state.is_completed(), state.message
    finished = time.monotonic()
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
    text = webhook.wait_for("no nightly has completed for 26 hours")
    assert time.monotonic() - finished >= 5  # not at once: only once the window after the completion has passed
    assert f"the last one that did was {run.name} ({run.id})" in text
