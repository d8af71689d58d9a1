"""``cohort status`` rows from what Ray and each actor report (no Ray needed)."""

from actors.tools.admin_service import _status_row


def test_a_partition_that_refused_its_storage_is_not_serving_and_says_why():
    why = "the storage at s3://b/p belongs to another Cohort (cluster id 1234)"
    row = _status_row("offsets-1", {"State": "ALIVE", "Pid": 7},
                      {"state": "failed", "refusal": why}, present=True)
    assert row["state"] == "failed" and row["serving"] is False
    assert row["refusal"] == why


def test_a_serving_partition_row_has_no_refusal():
    row = _status_row("offsets-0", {"State": "ALIVE"}, {"state": "active"}, present=True)
    assert row["serving"] is True and "refusal" not in row
