"""The one-line failure of a shard names how many tries its stage had, read from the Prefect API."""
import contextvars
import threading
import time
import uuid
from types import SimpleNamespace

from prefect import task
from prefect.client.orchestration import get_client
from prefect.states import Failed, Running

from tasks.commit import _tries


@task(name="late-stage")
def late_stage():
    return None


def _record_late(task_run_id, delay: float):
    """The task run reaches the API only after `delay` (as batched events do on a loaded host), then fails."""
    time.sleep(delay)
    with get_client(sync_client=True) as client:
        client.create_task_run(late_stage, flow_run_id=None, dynamic_key="0", id=task_run_id, state=Running())
        client.set_task_run_state(task_run_id, Failed(message="injected"), force=True)


def test_the_try_count_waits_for_a_task_run_the_api_has_not_heard_of_yet(prefect_server):
    task_run_id = uuid.uuid4()
    context = contextvars.copy_context()  # the test's Prefect settings (the API URL) live in a context variable
    writer = threading.Thread(target=context.run, args=(_record_late, task_run_id, 1.5))
    writer.start()
    try:
        assert _tries(SimpleNamespace(task_run_id=task_run_id), wait_seconds=20) == " after 1 try"
    finally:
        writer.join()


def test_the_try_count_is_left_out_when_the_api_never_hears_of_the_run(prefect_server):
    assert _tries(SimpleNamespace(task_run_id=uuid.uuid4()), wait_seconds=0.5) == ""
