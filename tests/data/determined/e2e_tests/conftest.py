"""Determined's e2e test files here are test data (originals the compat tier compares its
copies against, see tests/data/determined/README.md), not tests to collect."""

collect_ignore_glob = ["*"]
