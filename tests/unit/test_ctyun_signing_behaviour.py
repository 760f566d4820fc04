"""The `Eop-date` header (`yyyyMMddTHHmmssZ`, CTyun contract 1.2) is written in China time with a literal
Z, as CTyun's Go clients send it from a machine in China (they format the local time and append
`Z`; the zone the gateway expects is not documented), whatever zone the deployer's clock is in;
a naive time cannot be placed and is refused before anything is signed."""

from datetime import datetime, timedelta, timezone

import pytest

from components.ctyun_hcc.api.signing import eop_date, parse_eop_date


@pytest.mark.parametrize("instant", [datetime(2026, 12, 1, 11, 30, 5, tzinfo=timezone.utc),
                                     datetime(2026, 12, 1, 6, 30, 5, tzinfo=timezone(timedelta(hours=-5)))])
def test_the_same_instant_gives_the_same_header_from_any_zone(instant):
    assert eop_date(instant) == "20261201T193005Z"
    assert parse_eop_date(eop_date(instant)) == instant


def test_a_naive_time_is_refused():
    with pytest.raises(ValueError) as e:
        eop_date(datetime(2026, 12, 1, 11, 30))
    assert str(e.value) == "eop_date needs an aware datetime (pass datetime.now(timezone.utc))"
