"""What an offsets partition turns away, and why: the bounds on its mailbox and owed replies.

Pure: ``refusal`` (``actors/runtime/mailbox.py``) is the admission rule
``OffsetsPartition.handle_batch`` applies before it queues anything; no Ray.
"""

from actors.runtime.mailbox import (
    MAX_QUEUED_REQUESTS,
    MAX_REQUESTS_PER_TURN,
    MAX_WAITING_REPLIES,
    refusal,
)
from protocol.errors import Errors


def test_an_active_partition_with_room_takes_requests():
    assert refusal("active", queued=0, waiting=0, incoming=1) is None
    assert refusal("active", queued=10, waiting=MAX_REQUESTS_PER_TURN, incoming=500) is None


def test_a_loading_partition_says_so_and_a_failed_one_is_unavailable():
    assert refusal("loading", 0, 0, 1) == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert refusal("failed", 0, 0, 1) == Errors.COORDINATOR_NOT_AVAILABLE


def test_a_full_mailbox_refuses_as_coordinator_not_available():
    assert refusal("active", MAX_QUEUED_REQUESTS - 1, 0, 1) is None
    assert refusal("active", MAX_QUEUED_REQUESTS, 0, 1) == Errors.COORDINATOR_NOT_AVAILABLE


def test_too_many_delayed_replies_refuse_as_coordinator_not_available():
    """Held JoinGroup/SyncGroup replies are bounded even while the mailbox is empty."""
    assert refusal("active", 0, MAX_WAITING_REPLIES - 1, 1) is None
    assert refusal("active", 0, MAX_WAITING_REPLIES, 1) == Errors.COORDINATOR_NOT_AVAILABLE
    # queued requests become owed replies: together they stay within the bound
    assert refusal("active", 1_000, MAX_WAITING_REPLIES - 1_000, 1) == (
        Errors.COORDINATOR_NOT_AVAILABLE
    )


def test_a_full_mailbox_still_leaves_room_for_delayed_replies():
    assert MAX_WAITING_REPLIES > MAX_QUEUED_REQUESTS + MAX_REQUESTS_PER_TURN


def test_a_partition_that_is_not_serving_says_why_in_kafkas_words():
    assert refusal("loading", 0, 0, 1) == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert refusal("recovering", 0, 0, 1) == Errors.COORDINATOR_NOT_AVAILABLE
    assert refusal("failed", 0, 0, 1) == Errors.COORDINATOR_NOT_AVAILABLE
    assert refusal("fenced", 0, 0, 1) == Errors.NOT_COORDINATOR
