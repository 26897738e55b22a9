"""Backups of the master's database (``det-master backup``/``restore``): SQLite through its
online backup API, PostgreSQL through ``pg_dump``/``pg_restore``; a manifest beside each."""
