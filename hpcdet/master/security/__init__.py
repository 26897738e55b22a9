"""Who may do what: tokens, authorization, workspaces, TLS, storage roots."""
