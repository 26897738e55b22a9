"""Services that run inside a task's job and are reached through the master's proxy
(``det notebook``): job-side code only, it never imports ``hpcdet.master``."""
