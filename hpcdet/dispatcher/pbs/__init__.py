"""The OpenPBS / PBS Professional backend (``resource_manager.type: pbs``)."""
