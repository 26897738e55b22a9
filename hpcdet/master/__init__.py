"""The master: the REST API and web pages over its database, the scheduler poller and the
experiment state machine (docs/architecture.md). Nothing outside it imports it: det, the SDK
and the jobs reach it over HTTP."""
