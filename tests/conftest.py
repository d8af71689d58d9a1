"""Suite-wide settings.

Hypothesis: no per-example deadline and no "too slow" health check, because CI runs on a
shared 2-core machine where timing is noise; the properties, not the speed, are under test
(speed lives in bench/).
"""

from hypothesis import HealthCheck, settings

settings.register_profile("cohort", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cohort")
