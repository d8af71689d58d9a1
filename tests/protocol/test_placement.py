"""Group placement must match Kafka's, so known Java hash values pin it down."""

from hypothesis import given
from hypothesis import strategies as st

from protocol.placement import java_string_hash, kafka_abs, partition_for


def test_java_string_hash_matches_known_java_values():
    # Values printed by Java's "...".hashCode().
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Hello, World!") == 1498789909
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112  # the classic collision
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # two UTF-16 units


def test_integer_min_value_hash_places_the_group_on_partition_zero():
    assert kafka_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 50) == 0


def test_negative_hashes_use_math_abs():
    assert java_string_hash("orders-processing") == -1823086853
    assert partition_for("orders-processing", 50) == 1823086853 % 50 == 3


@given(st.text(), st.integers(min_value=1, max_value=1000))
def test_every_group_lands_on_a_valid_partition(group_id, n):
    assert 0 <= partition_for(group_id, n) < n
    assert -(2**31) <= java_string_hash(group_id) < 2**31
