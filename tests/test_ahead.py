"""`ftdc.batches.ahead`: the next window made while the caller works on this one."""

import threading

import pytest

from ftdc.batches import ahead


def test_the_next_item_is_made_while_the_caller_holds_this_one():
    started = threading.Event()

    def items():
        yield 1
        started.set()  # made only when someone asks for the second item
        yield 2

    got = []
    for item in ahead(items()):
        if item == 1:
            # The caller has not asked for the second one yet: made ahead, it is under way anyway.
            assert started.wait(timeout=30)
        got.append(item)
    assert got == [1, 2]


def test_every_item_in_order_and_an_error_raised_where_it_is_read():
    def items():
        yield from range(5)
        raise ValueError("damaged")

    got = []
    with pytest.raises(ValueError, match="damaged"):
        for item in ahead(items()):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]


def test_leaving_early_stops_making_items():
    made = []

    def items():
        for n in range(100):
            made.append(n)
            yield n

    stream = ahead(items())
    assert next(stream) == 0
    stream.close()  # waits for the one under way, asks for no more
    assert made == [0, 1]
