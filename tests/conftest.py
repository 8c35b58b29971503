import os

from hypothesis import HealthCheck, settings

# Numba compiles on first call; the first example of a property test pays for it.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# the browser tier's fixtures (tests/browser and the Kafka one in tests/integration): defined
# once here, so one Playwright and one chromium serve the whole session
from tests.browser.harness import browser, page  # noqa: E402, F401
