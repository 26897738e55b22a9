"""master.yaml: reading and checking the master's settings (core, pools, run-as, hardening)."""
