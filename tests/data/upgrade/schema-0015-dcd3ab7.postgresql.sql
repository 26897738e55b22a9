--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: alembic_version; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);


--
-- Name: allocation_steps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.allocation_steps (
    id integer NOT NULL,
    allocation_id integer NOT NULL,
    trial_id integer NOT NULL,
    run_id integer NOT NULL,
    slots integer NOT NULL,
    script_path text NOT NULL,
    phase character varying(16) NOT NULL,
    step_id character varying(64),
    exit_code integer,
    cancel_requested boolean NOT NULL,
    placed_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    ended_at timestamp with time zone
);


--
-- Name: allocation_steps_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.allocation_steps_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: allocation_steps_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.allocation_steps_id_seq OWNED BY public.allocation_steps.id;


--
-- Name: allocations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.allocations (
    id integer NOT NULL,
    experiment_id integer NOT NULL,
    job_id character varying(64),
    name character varying(128) NOT NULL,
    job_dir text NOT NULL,
    slots integer NOT NULL,
    token character varying(64) NOT NULL,
    phase character varying(32) NOT NULL,
    native_state character varying(64),
    nodes text,
    release_requested boolean NOT NULL,
    cancel_requested boolean NOT NULL,
    end_cause character varying(64),
    submitted_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    last_seen_at timestamp with time zone,
    ended_at timestamp with time zone
);


--
-- Name: allocations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.allocations_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: allocations_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.allocations_id_seq OWNED BY public.allocations.id;


--
-- Name: auth_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.auth_tokens (
    id integer NOT NULL,
    username character varying(128) NOT NULL,
    kind character varying(16) NOT NULL,
    token_hash character varying(64) NOT NULL,
    name character varying(128) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    last_used_at timestamp with time zone
);


--
-- Name: auth_tokens_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.auth_tokens_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: auth_tokens_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.auth_tokens_id_seq OWNED BY public.auth_tokens.id;


--
-- Name: checkpoints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.checkpoints (
    uuid character varying(64) NOT NULL,
    trial_id integer NOT NULL,
    steps_completed bigint NOT NULL,
    metadata jsonb NOT NULL,
    resources jsonb NOT NULL,
    validation_metrics jsonb,
    state character varying(16) NOT NULL,
    reported_at timestamp with time zone NOT NULL
);


--
-- Name: cluster_snapshots; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.cluster_snapshots (
    kind character varying(32) NOT NULL,
    data jsonb NOT NULL,
    taken_at timestamp with time zone NOT NULL
);


--
-- Name: command_tasks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.command_tasks (
    id integer NOT NULL,
    owner character varying(128) NOT NULL,
    name character varying(256) NOT NULL,
    state character varying(32) NOT NULL,
    job_id character varying(64),
    job_dir text NOT NULL,
    pool character varying(128),
    partition character varying(128),
    account character varying(128),
    options jsonb NOT NULL,
    args jsonb NOT NULL,
    cwd text NOT NULL,
    workdir text NOT NULL,
    output_pattern text NOT NULL,
    error_pattern text,
    native_state character varying(64),
    reason text,
    exit_code integer,
    nodes text,
    cancel_requested boolean NOT NULL,
    cancel_sent_at timestamp with time zone,
    submitted_at timestamp with time zone NOT NULL,
    started_at timestamp with time zone,
    ended_at timestamp with time zone,
    workspace_id integer,
    kind character varying(16) DEFAULT 'batch'::character varying NOT NULL,
    config jsonb,
    service_host character varying(256),
    service_port integer,
    service_token character varying(128)
);


--
-- Name: command_tasks_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.command_tasks_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: command_tasks_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.command_tasks_id_seq OWNED BY public.command_tasks.id;


--
-- Name: experiments; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.experiments (
    id integer NOT NULL,
    name character varying(256) NOT NULL,
    description text NOT NULL,
    labels jsonb NOT NULL,
    owner character varying(128) NOT NULL,
    state character varying(32) NOT NULL,
    config jsonb NOT NULL,
    original_config text NOT NULL,
    context bytea NOT NULL,
    searcher_name character varying(32) NOT NULL,
    resource_pool character varying(128),
    archived boolean NOT NULL,
    created_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    searcher_state jsonb,
    progress double precision DEFAULT '0'::double precision NOT NULL,
    workspace_id integer,
    project_id integer,
    parent_id integer,
    searcher_etag character varying(32)
);


--
-- Name: experiments_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.experiments_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: experiments_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.experiments_id_seq OWNED BY public.experiments.id;


--
-- Name: jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.jobs (
    id integer NOT NULL,
    trial_id integer NOT NULL,
    run_id integer NOT NULL,
    job_id character varying(64),
    active boolean NOT NULL,
    cancel_requested boolean NOT NULL,
    phase character varying(32),
    native_state character varying(64),
    reason text,
    exit_code integer,
    nodes text,
    script_path text NOT NULL,
    log_offsets jsonb NOT NULL,
    submitted_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    name character varying(128) DEFAULT ''::character varying NOT NULL,
    requeues integer DEFAULT 0 NOT NULL
);


--
-- Name: jobs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.jobs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: jobs_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.jobs_id_seq OWNED BY public.jobs.id;


--
-- Name: metrics; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.metrics (
    id bigint NOT NULL,
    trial_id integer NOT NULL,
    "group" character varying(32) NOT NULL,
    steps_completed bigint NOT NULL,
    name character varying(256) NOT NULL,
    value double precision NOT NULL,
    reported_at timestamp with time zone NOT NULL,
    run_id integer DEFAULT 0 NOT NULL,
    requeue integer DEFAULT 0 NOT NULL,
    archived boolean DEFAULT false NOT NULL
);


--
-- Name: metrics_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.metrics_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: metrics_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.metrics_id_seq OWNED BY public.metrics.id;


--
-- Name: model_versions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.model_versions (
    id integer NOT NULL,
    model_id integer NOT NULL,
    version integer NOT NULL,
    checkpoint_uuid character varying(64) NOT NULL,
    name character varying(256) NOT NULL,
    comment text NOT NULL,
    notes text NOT NULL,
    metadata jsonb NOT NULL,
    labels jsonb NOT NULL,
    owner character varying(128) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: model_versions_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.model_versions_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: model_versions_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.model_versions_id_seq OWNED BY public.model_versions.id;


--
-- Name: models; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.models (
    id integer NOT NULL,
    name character varying(256) NOT NULL,
    description text NOT NULL,
    metadata jsonb NOT NULL,
    labels jsonb NOT NULL,
    notes text NOT NULL,
    owner character varying(128) NOT NULL,
    workspace_id integer,
    archived boolean NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);


--
-- Name: models_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.models_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: models_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.models_id_seq OWNED BY public.models.id;


--
-- Name: projects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.projects (
    id integer NOT NULL,
    workspace_id integer NOT NULL,
    name character varying(128) NOT NULL,
    description text NOT NULL,
    created_by character varying(128) NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: projects_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.projects_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: projects_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.projects_id_seq OWNED BY public.projects.id;


--
-- Name: report_streams; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.report_streams (
    trial_id integer NOT NULL,
    run_id integer NOT NULL,
    requeue integer NOT NULL,
    rank integer NOT NULL,
    last_seq bigint NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: searcher_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.searcher_events (
    id bigint NOT NULL,
    experiment_id integer NOT NULL,
    trial_id integer NOT NULL,
    steps_completed bigint NOT NULL,
    metrics jsonb NOT NULL,
    processed boolean NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: searcher_events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.searcher_events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: searcher_events_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.searcher_events_id_seq OWNED BY public.searcher_events.id;


--
-- Name: searcher_journal; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.searcher_journal (
    id bigint NOT NULL,
    experiment_id integer NOT NULL,
    seq integer NOT NULL,
    kind character varying(16) NOT NULL,
    request_id character varying(36) NOT NULL,
    metric double precision,
    time_units double precision,
    reason character varying(16)
);


--
-- Name: searcher_journal_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.searcher_journal_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: searcher_journal_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.searcher_journal_id_seq OWNED BY public.searcher_journal.id;


--
-- Name: shell_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.shell_keys (
    task_id integer NOT NULL,
    client_private_key text NOT NULL,
    client_public_key text NOT NULL,
    host_public_key text NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: state_changes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.state_changes (
    id bigint NOT NULL,
    entity_kind character varying(16) NOT NULL,
    entity_id integer NOT NULL,
    from_state character varying(32),
    to_state character varying(32) NOT NULL,
    cause text NOT NULL,
    actor character varying(128) NOT NULL,
    at timestamp with time zone NOT NULL
);


--
-- Name: state_changes_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.state_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: state_changes_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.state_changes_id_seq OWNED BY public.state_changes.id;


--
-- Name: templates; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.templates (
    name character varying(128) NOT NULL,
    config jsonb NOT NULL,
    owner character varying(128) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    workspace_id integer
);


--
-- Name: trial_logs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.trial_logs (
    id bigint NOT NULL,
    trial_id integer NOT NULL,
    job_id character varying(64),
    rank integer,
    stream character varying(8) NOT NULL,
    line text NOT NULL,
    at timestamp with time zone NOT NULL,
    node character varying(128)
);


--
-- Name: trial_logs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.trial_logs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: trial_logs_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.trial_logs_id_seq OWNED BY public.trial_logs.id;


--
-- Name: trials; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.trials (
    id integer NOT NULL,
    experiment_id integer NOT NULL,
    state character varying(32) NOT NULL,
    hparams jsonb NOT NULL,
    seed bigint NOT NULL,
    restarts integer NOT NULL,
    run_id integer NOT NULL,
    steps_completed bigint NOT NULL,
    token character varying(64) NOT NULL,
    job_dir text NOT NULL,
    latest_checkpoint character varying(64),
    best_validation jsonb,
    latest_validation jsonb,
    created_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    request_id character varying(36),
    early_exit character varying(32),
    searcher_closed boolean DEFAULT false NOT NULL,
    stop_requested_at timestamp with time zone,
    stop_reason character varying(32),
    interruptions integer DEFAULT 0 NOT NULL,
    cancel_retries boolean DEFAULT false NOT NULL,
    excluded_nodes jsonb DEFAULT '[]'::jsonb NOT NULL
);


--
-- Name: trials_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.trials_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: trials_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.trials_id_seq OWNED BY public.trials.id;


--
-- Name: users; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.users (
    name character varying(128) NOT NULL,
    first_seen timestamp with time zone NOT NULL,
    last_seen timestamp with time zone NOT NULL
);


--
-- Name: workspace_members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workspace_members (
    workspace_id integer NOT NULL,
    "user" character varying(128) NOT NULL,
    role character varying(16) NOT NULL,
    added_at timestamp with time zone NOT NULL
);


--
-- Name: workspaces; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workspaces (
    id integer NOT NULL,
    name character varying(128) NOT NULL,
    created_by character varying(128) NOT NULL,
    created_at timestamp with time zone NOT NULL
);


--
-- Name: workspaces_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.workspaces_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: workspaces_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.workspaces_id_seq OWNED BY public.workspaces.id;


--
-- Name: allocation_steps id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocation_steps ALTER COLUMN id SET DEFAULT nextval('public.allocation_steps_id_seq'::regclass);


--
-- Name: allocations id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocations ALTER COLUMN id SET DEFAULT nextval('public.allocations_id_seq'::regclass);


--
-- Name: auth_tokens id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_tokens ALTER COLUMN id SET DEFAULT nextval('public.auth_tokens_id_seq'::regclass);


--
-- Name: command_tasks id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.command_tasks ALTER COLUMN id SET DEFAULT nextval('public.command_tasks_id_seq'::regclass);


--
-- Name: experiments id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.experiments ALTER COLUMN id SET DEFAULT nextval('public.experiments_id_seq'::regclass);


--
-- Name: jobs id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs ALTER COLUMN id SET DEFAULT nextval('public.jobs_id_seq'::regclass);


--
-- Name: metrics id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metrics ALTER COLUMN id SET DEFAULT nextval('public.metrics_id_seq'::regclass);


--
-- Name: model_versions id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.model_versions ALTER COLUMN id SET DEFAULT nextval('public.model_versions_id_seq'::regclass);


--
-- Name: models id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.models ALTER COLUMN id SET DEFAULT nextval('public.models_id_seq'::regclass);


--
-- Name: projects id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects ALTER COLUMN id SET DEFAULT nextval('public.projects_id_seq'::regclass);


--
-- Name: searcher_events id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_events ALTER COLUMN id SET DEFAULT nextval('public.searcher_events_id_seq'::regclass);


--
-- Name: searcher_journal id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_journal ALTER COLUMN id SET DEFAULT nextval('public.searcher_journal_id_seq'::regclass);


--
-- Name: state_changes id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.state_changes ALTER COLUMN id SET DEFAULT nextval('public.state_changes_id_seq'::regclass);


--
-- Name: trial_logs id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trial_logs ALTER COLUMN id SET DEFAULT nextval('public.trial_logs_id_seq'::regclass);


--
-- Name: trials id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trials ALTER COLUMN id SET DEFAULT nextval('public.trials_id_seq'::regclass);


--
-- Name: workspaces id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspaces ALTER COLUMN id SET DEFAULT nextval('public.workspaces_id_seq'::regclass);


--
-- Data for Name: alembic_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.alembic_version VALUES ('0015');


--
-- Data for Name: allocation_steps; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: allocations; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: auth_tokens; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.auth_tokens VALUES (1, 'alice', 'api', 'd3692a8d9edab86e6bd7a04e1bdb6b348481147afa4b1395ed8c78573338ae7c', 'ci', '2026-11-30 11:31:22.042478+00', '2036-11-27 11:31:22.042478+00', NULL, NULL);


--
-- Data for Name: checkpoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000001', 1, 5, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 11:31:22.82343+00');
INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000004', 4, 10, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 11:31:22.866175+00');
INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000005', 5, 5, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 11:31:22.884064+00');
INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000006', 6, 5, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 11:31:22.899768+00');


--
-- Data for Name: cluster_snapshots; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: command_tasks; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.command_tasks VALUES (1, 'bob', 'cmd-running', 'RUNNING', '107', '@JOB_ROOT@/tasks/task-1', NULL, NULL, NULL, '[["output", "none"], ["nodes", "1"], ["ntasks-per-node", "1"], ["cpus-per-task", "1"], ["nice", "4150"]]', '[]', '@JOB_ROOT@/tasks/task-1', '@JOB_ROOT@/tasks/task-1', 'none', NULL, 'RUNNING', 'Resources', 0, 'node1', false, NULL, '2026-11-30 11:31:22.917515+00', '2026-11-30 11:31:23.013681+00', NULL, NULL, 'command', '{"resources": {"slots": 1}, "entrypoint": ["sleep", "1000"], "description": "cmd-running"}', NULL, NULL, NULL);
INSERT INTO public.command_tasks VALUES (5, 'bob', 'nb', 'QUEUED', '111', '@JOB_ROOT@/tasks/task-5', NULL, NULL, NULL, '[["output", "none"], ["nodes", "1"], ["ntasks-per-node", "1"], ["cpus-per-task", "1"], ["nice", "4150"]]', '[]', '@JOB_ROOT@/tasks/task-5', '@JOB_ROOT@/tasks/task-5', 'none', NULL, 'PENDING', 'Resources', 0, 'node1', false, NULL, '2026-11-30 11:31:22.951669+00', NULL, NULL, NULL, 'notebook', '{"resources": {"slots": 1}, "entrypoint": ["/work/main/.venv/bin/python", "-m", "hpcdet.services.notebook"], "description": "nb"}', NULL, NULL, 'bd9c5a533f008dd18ac4b3ef491d908f09dc4cd90fdf4324084aa601efbf069c');
INSERT INTO public.command_tasks VALUES (2, 'bob', 'cmd-completed', 'COMPLETED', '108', '@JOB_ROOT@/tasks/task-2', NULL, NULL, NULL, '[["output", "none"], ["nodes", "1"], ["ntasks-per-node", "1"], ["cpus-per-task", "1"], ["nice", "4150"]]', '[]', '@JOB_ROOT@/tasks/task-2', '@JOB_ROOT@/tasks/task-2', 'none', NULL, 'COMPLETED', 'Resources', 0, 'node1', false, NULL, '2026-11-30 11:31:22.927859+00', '2026-11-30 11:31:23.013789+00', '2026-11-30 11:31:23.115871+00', NULL, 'command', '{"resources": {"slots": 1}, "entrypoint": ["true"], "description": "cmd-completed"}', NULL, NULL, NULL);
INSERT INTO public.command_tasks VALUES (3, 'bob', 'cmd-error', 'ERROR', '109', '@JOB_ROOT@/tasks/task-3', NULL, NULL, NULL, '[["output", "none"], ["nodes", "1"], ["ntasks-per-node", "1"], ["cpus-per-task", "1"], ["nice", "4150"]]', '[]', '@JOB_ROOT@/tasks/task-3', '@JOB_ROOT@/tasks/task-3', 'none', NULL, 'FAILED', 'Resources', 1, 'node1', false, NULL, '2026-11-30 11:31:22.935531+00', '2026-11-30 11:31:23.013828+00', '2026-11-30 11:31:23.115974+00', NULL, 'command', '{"resources": {"slots": 1}, "entrypoint": ["false"], "description": "cmd-error"}', NULL, NULL, NULL);
INSERT INTO public.command_tasks VALUES (4, 'bob', 'cmd-canceled', 'CANCELED', '110', '@JOB_ROOT@/tasks/task-4', NULL, NULL, NULL, '[["output", "none"], ["nodes", "1"], ["ntasks-per-node", "1"], ["cpus-per-task", "1"], ["nice", "4150"]]', '[]', '@JOB_ROOT@/tasks/task-4', '@JOB_ROOT@/tasks/task-4', 'none', NULL, 'CANCELLED', 'Resources', 1, 'node1', true, '2026-11-30 11:31:23.107783+00', '2026-11-30 11:31:22.943647+00', '2026-11-30 11:31:23.01386+00', '2026-11-30 11:31:23.11602+00', NULL, 'command', '{"resources": {"slots": 1}, "entrypoint": ["sleep", "1000"], "description": "cmd-canceled"}', NULL, NULL, NULL);


--
-- Data for Name: experiments; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.experiments VALUES (2, 'queued', '', '[]', 'alice', 'ACTIVE', '{"pbs": {"launcher": null, "pbsbatch_args": null, "slots_per_node": null}, "data": {}, "name": "queued", "debug": false, "slurm": {"gpu_type": null, "launcher": null, "sbatch_args": null, "slots_per_node": null}, "labels": [], "project": null, "internal": null, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "source_trial_id": null, "smaller_is_better": true, "source_checkpoint_uuid": null}, "security": null, "profiling": {"enabled": false, "sync_timings": true, "begin_on_batch": 0, "end_after_batch": null}, "resources": {"slots": null, "weight": 1, "devices": [], "priority": null, "shm_size": null, "max_slots": null, "allocation": null, "agent_label": null, "resource_pool": null, "is_single_node": null, "native_parallel": false, "slots_per_trial": 1}, "workspace": null, "data_layer": null, "entrypoint": "python3 train.py", "bind_mounts": [], "description": null, "environment": {"image": {"cpu": null, "cuda": null, "rocm": null}, "ports": {}, "pod_spec": null, "proxy_ports": [], "registry_auth": null, "add_capabilities": [], "force_pull_image": false, "drop_capabilities": [], "environment_variables": {"cpu": [], "cuda": [], "rocm": []}}, "integrations": null, "log_policies": [{"name": "CUDA OOM", "action": null, "signal": null, "actions": null, "pattern": ".*CUDA out of memory.*"}, {"name": "ECC Error", "action": null, "signal": null, "actions": null, "pattern": ".*uncorrectable ECC error encountered.*"}], "max_restarts": 0, "optimizations": {"mixed_precision": "O0", "gradient_compression": false, "aggregation_frequency": 1, "grad_updates_size_file": null, "auto_tune_tensor_fusion": false, "tensor_fusion_threshold": 64, "average_training_metrics": true, "tensor_fusion_cycle_time": 1, "average_aggregated_gradients": true}, "hyperparameters": {"lr": {"val": 0.1, "type": "const"}}, "reproducibility": {"experiment_seed": 194097067}, "scheduling_unit": 100, "retention_policy": null, "checkpoint_policy": "best", "metrics_retention": null, "records_per_epoch": 0, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints", "propagation": "rprivate", "storage_path": null, "container_path": null, "checkpoint_path": null, "save_trial_best": 1, "tensorboard_path": null, "save_trial_latest": 1, "save_experiment_best": 0}, "preemption_timeout": null, "tensorboard_storage": null, "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 0}, "perform_initial_validation": false}', 'name: queued
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b08008a5e0d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 11:31:22.15449+00', NULL, '{"rng": {"key": [3512452958, 1308150867, 509728855, 2082947332, 4032237556, 838748198, 3240105564, 699759566, 2641430599, 913569279, 919886181, 1472762955, 2961849589, 1084213716, 1829138171, 1715019406, 403561649, 2432383646, 1043049864, 949698387, 3675361157, 1828854693, 4030789304, 4114496122, 1253476057, 3247051647, 2390271322, 1182107774, 2006569381, 1537701170, 3329031939, 2656259928, 3331285759, 2529559823, 3075305135, 3869233674, 1260825471, 2566774300, 2087882249, 3706626924, 3975637527, 870746137, 775216978, 2364603429, 1086993441, 3571526713, 888622225, 1256856288, 2229552831, 2279458249, 1519677241, 3983440775, 1441484457, 4163300492, 3648238146, 4149286332, 3458755292, 4046660017, 2245766608, 302866897, 1759187471, 431224807, 123045484, 2290273133, 3867804528, 3277293513, 868315839, 137302461, 1304293870, 3409913602, 1994974716, 3051174009, 2466987736, 2744872860, 2118094479, 333458376, 933244687, 1661039157, 4100851476, 2447744542, 3377031741, 1569227005, 3141102119, 2974502819, 3985756891, 3111437126, 4033420467, 1855488836, 3621781401, 2719676687, 3180473732, 2076233353, 1372529243, 3770240858, 811853505, 2958271748, 2688400987, 4047691007, 60536404, 1907862479, 2521943288, 3696450734, 324200440, 3605630184, 261906875, 2397855496, 2977152691, 695519059, 2922063879, 2505794531, 77398000, 2860256412, 3924506122, 2969045884, 1133286863, 900642025, 2922740987, 2119770866, 3501321098, 69075436, 1566383785, 4089512428, 1969963175, 1684136233, 1467677383, 3168730753, 408412051, 3062996430, 2309538194, 2547441141, 1380141724, 4154855858, 2781852283, 2831925530, 3662633457, 2534252895, 3440052609, 2412069270, 1005227296, 1687650454, 1238118785, 2293099477, 91765677, 3804493289, 632930377, 2819755375, 1883199365, 219283858, 4141560375, 566021466, 2357739569, 1021825971, 739637364, 1043748444, 1452272361, 2929330470, 1817586876, 3560722671, 2908355737, 1913137926, 667333344, 4262527537, 2752000059, 1317700574, 1862594729, 3477059689, 800393965, 925680217, 1095833557, 553333740, 2654891194, 1686691947, 2743328453, 359634303, 3186083349, 1202850763, 3797556089, 2550393588, 4023724325, 1955007293, 1917640007, 3864822669, 3164414845, 664848383, 2524418620, 3832379676, 2087365119, 448831616, 1902367783, 515447404, 4021172716, 1502256454, 2513249960, 654698262, 566709012, 4214172830, 1202309518, 1986763769, 3918613125, 2589601879, 69684353, 1821530910, 925331191, 2791238689, 1837199561, 4258077297, 2055270201, 3978607660, 4123272279, 520340664, 1807255729, 2238203310, 3212252052, 66063291, 2449609096, 2499311655, 2188964745, 2947016330, 2088014246, 2003637637, 3761167767, 3530845959, 3223655540, 2369942046, 2003717126, 2532818349, 60624983, 2535399074, 2538412751, 3895265191, 2465106498, 3153400984, 4218150796, 157667176, 2098705332, 4256097210, 1912229482, 488171045, 1563225377, 4152432218, 2375519253, 3446494757, 2671576616, 2120446819, 4269225202, 2631031966, 3477697519, 3275358478, 2184691092, 4020346075, 1319403049, 1040349126, 3284364819, 3077172545, 1348280999, 989408797, 3431569909, 1014641612, 142638422, 466117476, 2397576198, 2275007679, 3442952076, 2685606361, 1750687519, 215711679, 3078795783, 723616962, 499036466, 2662021565, 2027189798, 1765589365, 2884706557, 2591444673, 3693630411, 1600358789, 2559050335, 1532324736, 1574573520, 1438243485, 1853755715, 18630505, 3132386901, 4094754471, 2350023378, 213723999, 986538755, 2464116561, 3426603816, 2794817824, 2067582105, 3133914452, 1844608976, 192470542, 296333734, 993846584, 4023297207, 3512454547, 1363509196, 2306107824, 1936748864, 3694868776, 4142214979, 311768755, 501834729, 525050295, 316347716, 866074242, 3913763416, 2595092122, 3019542396, 3890265420, 887465398, 1895612598, 12937715, 1819869637, 1329906232, 2546890403, 1888244796, 253788159, 10600508, 267502431, 3967029515, 3478795891, 2811998845, 1054973369, 2038711576, 2508097167, 618687299, 669449895, 2866715014, 3402920007, 2472037408, 2366654940, 1570014867, 2060937127, 2981882517, 4294967137, 478998828, 3179502874, 840791641, 3445815279, 911658512, 2643704082, 508044053, 96387144, 1356329600, 934297862, 3966315904, 1903694828, 2404460311, 1668721330, 2583682573, 4144201032, 160066900, 3446701588, 577907642, 1844030751, 2168830978, 157120882, 215028711, 3153406581, 2987220259, 1508509450, 2712113435, 3398223194, 2932665634, 4181844735, 1828042194, 769648732, 3942558056, 797198550, 967197637, 2564545131, 3747112422, 470099048, 2566802617, 3401732863, 3541848068, 811075762, 2570916447, 355142169, 1217790253, 1304710360, 2636155555, 3490294459, 1706285528, 435622584, 4007535132, 3475705380, 1351114095, 404421789, 3051768585, 3529181582, 3309600208, 623741644, 1444717597, 1886714700, 2611317563, 3688055563, 1669421657, 1774659604, 1182403289, 2858058544, 783383740, 2799982300, 3294430442, 1406434227, 3004514981, 3456763271, 1073166301, 2237030916, 1511814949, 451434765, 872216188, 3727267350, 4081412776, 3082652927, 2544451442, 1866654625, 3513768556, 183854328, 2631839641, 3728559896, 516041750, 1600702344, 2052771996, 2073205406, 2074250714, 799592156, 1506867095, 959789097, 1082461078, 1456372936, 2761633552, 2496633020, 1965507431, 3700199398, 1015334130, 2288826143, 557258973, 2026581349, 556915311, 3342888837, 428125135, 1916594439, 3454624830, 4092333251, 675990449, 2218566045, 832025615, 1811436078, 529155032, 3699896964, 2691010288, 882720224, 2037831148, 189851494, 3745462178, 2001787433, 1350827336, 245089112, 3136867233, 1288374501, 1375764356, 258461736, 1545486579, 3423801544, 1126879201, 248432307, 5082804, 1849261660, 3169866154, 45521848, 3867703878, 56687683, 2696623093, 355744595, 2489676552, 3172857171, 4175045129, 1720414974, 1627504193, 3697256651, 3571951326, 1898343225, 475882773, 3852822306, 4226217215, 851412767, 1140534608, 1872323579, 3764542255, 3658347450, 1593562132, 2364813813, 3727038773, 2031806599, 4227583700, 35606592, 1305287959, 1302055470, 183178608, 2567964922, 3144953071, 1429339325, 3997697980, 1548305783, 1246174451, 2733826196, 274947271, 3319435556, 2548898958, 3949250114, 4020439870, 1240117128, 2897077232, 1579661706, 3962972804, 1124682180, 316936597, 110980490, 2765504390, 1512747669, 936231742, 401920170, 515707690, 3420634732, 221869173, 427064054, 2952706999, 2111730149, 1099593833, 805295845, 1745530204, 3362811898, 2851776051, 414332623, 1420462394, 1899076320, 3423105941, 1925157139, 94789186, 3215022407, 646713676, 1685308221, 2340803158, 3219651505, 2586880492, 1694638005, 2413590485, 2251821039, 1912055423, 2108213547, 428452452, 4061075501, 769805625, 2744317419, 1475665280, 927065277, 731847713, 2076057360, 558993329, 3937733560, 1029975240, 2988075176, 1249285720, 1349597169, 3893781240, 3543868338, 1978808004, 147362750, 3611352743, 4244728990, 3881157382, 696399927, 809511596, 2915102838, 1442906795, 992613987, 516752133, 1149976950, 1534743110, 3839684215, 2134719214, 2273529912, 2653550506, 2243124899, 3202084213, 3270922415, 1271794972, 3449346592, 4132487800, 1499270231, 1117675803, 722662622, 2209828453, 3347756673, 1723583664, 1327308554, 3705699150, 3018243463, 1975494568, 380468422, 3817961470, 260750906, 1983716592, 2595963749, 3123686868, 943015837, 2077660556, 1799174929, 1577516119, 2500538520, 2568868233, 741996786, 2377602291, 682492108, 548212394, 911753037, 3050359077, 1587773807, 566349062, 2125547442], "pos": 5}, "closed": [], "method": {"invalid": 0}, "failures": [], "requested": ["bfd167be-dd68-4d7e-b701-6c0e9f9bce21"]}', 0, 1, 1, NULL, 'bca600a88b42036afe1ac6d99bb46483');
INSERT INTO public.experiments VALUES (3, 'paused', '', '[]', 'alice', 'PAUSED', '{"pbs": {"launcher": null, "pbsbatch_args": null, "slots_per_node": null}, "data": {}, "name": "paused", "debug": false, "slurm": {"gpu_type": null, "launcher": null, "sbatch_args": null, "slots_per_node": null}, "labels": [], "project": null, "internal": null, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "source_trial_id": null, "smaller_is_better": true, "source_checkpoint_uuid": null}, "security": null, "profiling": {"enabled": false, "sync_timings": true, "begin_on_batch": 0, "end_after_batch": null}, "resources": {"slots": null, "weight": 1, "devices": [], "priority": null, "shm_size": null, "max_slots": null, "allocation": null, "agent_label": null, "resource_pool": null, "is_single_node": null, "native_parallel": false, "slots_per_trial": 1}, "workspace": null, "data_layer": null, "entrypoint": "python3 train.py", "bind_mounts": [], "description": null, "environment": {"image": {"cpu": null, "cuda": null, "rocm": null}, "ports": {}, "pod_spec": null, "proxy_ports": [], "registry_auth": null, "add_capabilities": [], "force_pull_image": false, "drop_capabilities": [], "environment_variables": {"cpu": [], "cuda": [], "rocm": []}}, "integrations": null, "log_policies": [{"name": "CUDA OOM", "action": null, "signal": null, "actions": null, "pattern": ".*CUDA out of memory.*"}, {"name": "ECC Error", "action": null, "signal": null, "actions": null, "pattern": ".*uncorrectable ECC error encountered.*"}], "max_restarts": 0, "optimizations": {"mixed_precision": "O0", "gradient_compression": false, "aggregation_frequency": 1, "grad_updates_size_file": null, "auto_tune_tensor_fusion": false, "tensor_fusion_threshold": 64, "average_training_metrics": true, "tensor_fusion_cycle_time": 1, "average_aggregated_gradients": true}, "hyperparameters": {"lr": {"val": 0.1, "type": "const"}}, "reproducibility": {"experiment_seed": 1428825607}, "scheduling_unit": 100, "retention_policy": null, "checkpoint_policy": "best", "metrics_retention": null, "records_per_epoch": 0, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints", "propagation": "rprivate", "storage_path": null, "container_path": null, "checkpoint_path": null, "save_trial_best": 1, "tensorboard_path": null, "save_trial_latest": 1, "save_experiment_best": 0}, "preemption_timeout": null, "tensorboard_storage": null, "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 0}, "perform_initial_validation": false}', 'name: paused
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b08008a5e0d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 11:31:22.198385+00', NULL, '{"rng": {"key": [3249190349, 1068539964, 632400096, 1784072879, 2328035334, 3267820631, 2186478784, 3933351827, 2535952024, 1088476980, 1957254981, 651116698, 1546828305, 3424219861, 1602068618, 1427662955, 2627773403, 3057934330, 1762959754, 2587404780, 918084286, 583240008, 4039155560, 1123556806, 2898303811, 2583153689, 2149642291, 4209718222, 2771643636, 3848038061, 847516878, 270566323, 1097288540, 646639427, 1735748972, 4208664387, 3812726521, 1356428847, 2207473621, 1053808778, 398558434, 2159003572, 728193027, 1289653652, 552460468, 1176460193, 807219119, 146856274, 3923699500, 1753645781, 3132011650, 3449040471, 2552445772, 860858525, 2884898261, 583606054, 3695240064, 1937316888, 2393694758, 1708091435, 2309391009, 3217670493, 2557848893, 2408267851, 4267714966, 3569917246, 1577279019, 3666444309, 2816955195, 3317627070, 581812403, 2765344454, 2598953407, 3211626321, 3648891196, 2179440709, 1393027221, 3602299614, 3680943903, 2519000165, 1853799703, 4002332478, 4199281946, 1092781282, 4071315657, 2670377943, 2718321385, 3965484106, 2504058786, 1664490178, 2202798104, 3947698600, 1485506938, 533491038, 2930674835, 2549092156, 4254749579, 2569540391, 3883331461, 2152207253, 1162857375, 2447146602, 2830061079, 2702873601, 3368268412, 496211892, 1133528742, 3484802249, 2878799193, 332547134, 1820140318, 158413895, 1223023336, 2951979292, 1455952847, 1659962461, 1012921164, 3026350162, 3031922428, 1317738695, 4159732280, 2587592303, 3007600102, 699082994, 3563557645, 1514427803, 2219706830, 2137281921, 2866418349, 1493946022, 724259596, 833240203, 2510529253, 2091295253, 1144605744, 4190493321, 1357250792, 2642179815, 2825560357, 2621178193, 3968606708, 2760810647, 1855387364, 3789598856, 784998127, 1586287666, 3596906789, 671216048, 1059441599, 1948217215, 3682116329, 2341586950, 2925429888, 3431439844, 3263370848, 568175885, 3473349763, 3597715066, 2389401468, 1249446743, 947016122, 1693788141, 3019075343, 1226999018, 3820506453, 1605478085, 2304353696, 2532967515, 1208060537, 1533189883, 3610394336, 832156953, 2220457612, 3606987250, 2103866625, 3711333736, 2667431547, 3298350504, 4191683617, 2070779972, 1534931911, 1868962583, 3339352553, 2065996159, 758785960, 982814689, 3132504442, 3409854523, 1420001919, 2573569375, 1554724407, 946541955, 1127492253, 2789849750, 488731305, 3912613618, 3072670955, 366424313, 2094652220, 3256463248, 1918006346, 2991125247, 2238054082, 1700580219, 365406386, 716279656, 1981108185, 1668263589, 586437777, 4013064171, 2536311965, 3601610937, 2647321152, 1488951515, 448353897, 3284078013, 3249141680, 1489468336, 417939630, 4217952517, 2724470694, 1583091228, 1224800640, 3690266784, 1999032446, 3353534136, 2291478850, 3398960145, 2676685021, 882992649, 2985145227, 875395316, 330221912, 255808552, 4181493320, 2831923269, 1400666222, 1857490876, 3852083722, 3213848894, 2037158946, 416304940, 4269390403, 2934675766, 2666628692, 2937479021, 2789224618, 3141065133, 2080760664, 3384473509, 268457066, 2211874329, 3372728577, 2709516996, 4215024747, 3059885421, 991573770, 4002930401, 1730002170, 3613734274, 1762649206, 933047659, 501077885, 2881750557, 2695786797, 3091239011, 1920040929, 1299465146, 1030408533, 1288937057, 1878062704, 3473826808, 3917344761, 1811173576, 3117812385, 2694173031, 4215913771, 999875103, 3729768735, 2884228280, 1484662133, 1075695142, 2483639056, 2948273046, 603967820, 3102741653, 1314163914, 377899385, 2697842523, 2318472146, 1229800163, 774097563, 2878627770, 3696937389, 2230837995, 3560428820, 4225639532, 2977969741, 4039917870, 3577649468, 1338780270, 3030424160, 3552013758, 1862172426, 2655297151, 2263133350, 1707807883, 1972580856, 1680576004, 846482820, 751223404, 387762863, 1378295868, 93740773, 159360482, 2610080819, 3663840206, 3175588806, 3790043200, 74865655, 3091126976, 2883791573, 1802970695, 2281289776, 2543569467, 3969796906, 1122808835, 2685470718, 1557045322, 1265533765, 144431768, 2947933141, 1016592818, 4283864526, 1568025292, 1216389447, 2868331820, 1052537147, 3662620741, 3889059770, 1078994213, 2112677542, 1715326102, 563292303, 78237462, 2587585832, 1315974339, 2917484959, 60945953, 44217007, 4239050351, 1771726014, 2226480885, 897829417, 3782969495, 726860995, 187004531, 1074738011, 1827664351, 4112261848, 1719378029, 954922818, 3309265387, 3809187109, 1354172941, 1167407127, 1699899229, 3653405955, 2748420425, 634319440, 1573007338, 697427364, 2957957633, 2713802777, 1105747663, 2293531369, 3307150185, 2772699468, 3604711714, 3245671895, 2805551035, 1894858067, 4237903762, 1043891787, 513480651, 314375290, 1978511430, 3762799521, 1793869604, 2780737055, 3762587686, 3110836363, 2795089573, 2556018304, 1652877646, 1483444481, 3769770298, 3860151165, 1110756639, 596155275, 1549895213, 3826941349, 2200543990, 2763548251, 2274119210, 4013943092, 2961773876, 3012147772, 2843013805, 2097274478, 3643959077, 564596719, 3588515154, 3765255082, 1924111419, 1363659188, 910407527, 1437096643, 2939630665, 2628529194, 3788592996, 1097899547, 1692838688, 360141971, 4052602996, 1953122323, 2046240303, 90372433, 2233669327, 309277284, 1035981721, 1507386837, 2838468300, 4120480020, 781461678, 263230112, 2763512214, 4162455386, 3302347432, 2266601681, 3389383957, 2305958130, 2172774004, 3425267611, 2275362847, 3487033943, 2332241136, 394412866, 4146035172, 478286175, 329981448, 2481168515, 1208446507, 962334220, 1354336982, 1085402737, 691903999, 4167707603, 2957769654, 3150863886, 4190143865, 3078914842, 930346203, 3907640462, 2587857981, 3351398645, 3600193772, 2487735334, 3721416479, 1977799717, 3447227648, 22674023, 2760160726, 2582748958, 3810536612, 204740174, 4173777642, 3304085458, 2938317404, 1846269957, 130905420, 2891118516, 1376917557, 1374469082, 2395730939, 2421622889, 1275190194, 2584986405, 4001422625, 3135085266, 99637479, 4191766535, 1820766545, 2843176187, 2091224281, 3440799966, 2227307071, 2478477956, 705232044, 3500853800, 1949162218, 4284690795, 1351637674, 3340454973, 1258016989, 685856350, 133321780, 131454509, 2929056482, 3863083601, 4290435172, 2105562003, 210263473, 1065084521, 1454489831, 2569868547, 2999587263, 3054400621, 3321345239, 2386260921, 2195848492, 2928419329, 3847080222, 1924053785, 3172383622, 4246262832, 2018232894, 273909946, 1515853486, 2324770535, 2860279060, 757940801, 506938038, 2855128919, 2147395861, 1252304265, 1104515711, 2354381941, 3126569307, 1468691513, 3890914456, 440369435, 947700896, 3062779839, 3304701493, 491114658, 3251193749, 706837322, 4232881468, 1825660743, 882882300, 3699206677, 1398876879, 431461471, 1422474727, 808640723, 1327800419, 1086022882, 512565811, 2091670914, 232989820, 473855609, 2778528133, 3486373130, 149982192, 1466024574, 2948823197, 2043699034, 358572323, 2211224746, 4270273559, 3168256794, 798602922, 474264744, 1138435505, 1825598961, 1045052492, 2077415122, 224879453, 1535116756, 55483682, 1167734884, 2640521827, 478475852, 3003991070, 1688722232, 1001165284, 2175553712, 3196130413, 729877978, 266942344, 518707594, 2910626766, 710926001, 1855429273, 3481531319, 2008463656, 468363010, 2365815240, 3169498314, 528396933, 1200694867, 973086863, 4082662978, 4097581119, 3462426540, 705743762, 2333086281, 733011089, 4219839273, 2396743532, 1545572004, 2982263896, 546259161, 642780919, 2511528821, 1751759455, 820412100, 3021518962, 3611366827, 3126570735, 2905425630, 941378737, 426756867], "pos": 5}, "closed": [], "method": {"invalid": 0}, "failures": [], "requested": ["b6cab63a-ce43-4b07-bb58-bb13e0b959ae"]}', 0, 1, 1, NULL, 'e99d2a654e9595383c6c1aa1791fa57d');
INSERT INTO public.experiments VALUES (1, 'running', '', '[]', 'alice', 'ACTIVE', '{"pbs": {"launcher": null, "pbsbatch_args": null, "slots_per_node": null}, "data": {}, "name": "running", "debug": false, "slurm": {"gpu_type": null, "launcher": null, "sbatch_args": null, "slots_per_node": null}, "labels": [], "project": null, "internal": null, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "source_trial_id": null, "smaller_is_better": true, "source_checkpoint_uuid": null}, "security": null, "profiling": {"enabled": false, "sync_timings": true, "begin_on_batch": 0, "end_after_batch": null}, "resources": {"slots": null, "weight": 1, "devices": [], "priority": null, "shm_size": null, "max_slots": null, "allocation": null, "agent_label": null, "resource_pool": null, "is_single_node": null, "native_parallel": false, "slots_per_trial": 1}, "workspace": null, "data_layer": null, "entrypoint": "python3 train.py", "bind_mounts": [], "description": null, "environment": {"image": {"cpu": null, "cuda": null, "rocm": null}, "ports": {}, "pod_spec": null, "proxy_ports": [], "registry_auth": null, "add_capabilities": [], "force_pull_image": false, "drop_capabilities": [], "environment_variables": {"cpu": [], "cuda": [], "rocm": []}}, "integrations": null, "log_policies": [{"name": "CUDA OOM", "action": null, "signal": null, "actions": null, "pattern": ".*CUDA out of memory.*"}, {"name": "ECC Error", "action": null, "signal": null, "actions": null, "pattern": ".*uncorrectable ECC error encountered.*"}], "max_restarts": 0, "optimizations": {"mixed_precision": "O0", "gradient_compression": false, "aggregation_frequency": 1, "grad_updates_size_file": null, "auto_tune_tensor_fusion": false, "tensor_fusion_threshold": 64, "average_training_metrics": true, "tensor_fusion_cycle_time": 1, "average_aggregated_gradients": true}, "hyperparameters": {"lr": {"val": 0.1, "type": "const"}}, "reproducibility": {"experiment_seed": 218442507}, "scheduling_unit": 100, "retention_policy": null, "checkpoint_policy": "best", "metrics_retention": null, "records_per_epoch": 0, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints", "propagation": "rprivate", "storage_path": null, "container_path": null, "checkpoint_path": null, "save_trial_best": 1, "tensorboard_path": null, "save_trial_latest": 1, "save_experiment_best": 0}, "preemption_timeout": null, "tensorboard_storage": null, "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 0}, "perform_initial_validation": false}', 'name: running
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b08008a5e0d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 11:31:22.110919+00', NULL, '{"rng": {"key": [2312717181, 2867599503, 2004043777, 889649319, 3379287202, 3426796255, 1231087564, 3352925349, 923139300, 1170908965, 514756880, 4082647967, 3028310236, 3328399655, 1745463405, 326611541, 2780980577, 1518049053, 2320346657, 4183671477, 277564701, 3755598902, 3594231012, 2136650487, 4195412103, 2964983447, 1102708838, 2913357337, 3007639175, 1267504111, 1908306371, 1426078019, 1076104221, 2626496632, 4051133852, 1879582973, 2188460330, 3621924615, 3451765876, 107511075, 3107564972, 3499860228, 4263137356, 834881736, 2357439572, 3410421908, 1083146650, 1972146599, 2457815961, 2908605096, 828467163, 3471695116, 902087853, 2296103829, 75058985, 2991385365, 3222753927, 3076030659, 177989206, 1940624233, 659004160, 2696984262, 3195362139, 2025625152, 2863331271, 2882371927, 4165776590, 1240977931, 853530342, 3581100781, 221863493, 2631386569, 2518130181, 2953802392, 1859465260, 2001594370, 2875649905, 1819488613, 307973132, 1221658921, 1185600129, 1474038613, 2107491737, 1674499690, 3491016019, 2122145710, 1575727309, 2191521788, 374759096, 1108899747, 3920776528, 3748666065, 1517768306, 3748554034, 1042743726, 3547280298, 3902167177, 2225002398, 2281372054, 3611965615, 2179630437, 331470415, 2756852734, 444803296, 4023233821, 1539347956, 3545633698, 673930371, 1110821981, 236619818, 2147816518, 2679892293, 3826324776, 807284626, 3732069671, 1126936063, 1413863478, 903306717, 947156604, 1819936069, 3799301783, 3053504099, 2194166153, 3166103060, 288979050, 92715270, 4017993909, 2495054727, 351521694, 3699538911, 2754526722, 333091314, 2998179722, 1168788916, 845195276, 1603774764, 4017003018, 3715572013, 114048287, 338023541, 3771257763, 2201927089, 1759978723, 656149235, 1766845775, 3113865472, 3569111192, 1451432365, 3808486616, 3708045720, 1493206729, 939400745, 3581807789, 1951513920, 3314623979, 3768321807, 3173669528, 3446169906, 527498414, 3629930622, 2125834797, 3430463059, 2952095299, 2894011366, 2981581909, 2375175537, 608052349, 3769811648, 22782915, 1870865647, 4085058216, 324476540, 3329490848, 504876673, 3271931995, 2863321269, 1345541051, 1175973478, 3367108319, 4154849227, 188475870, 2987956215, 3677486604, 772147138, 80345195, 2589628560, 3514670359, 4066725858, 99733205, 3008156909, 951188554, 1902572735, 1554935314, 1208781669, 2162653245, 280246733, 3786604096, 3866521674, 2108716279, 1800277810, 3761790895, 2236751605, 3851426724, 3597434408, 3187529461, 2598372723, 1967753265, 1805562349, 3287067256, 2139389342, 1014906088, 3869274550, 1866189406, 3498092373, 1441876738, 3110982091, 42872696, 3790988526, 4264821328, 2867714368, 1814619565, 2970727297, 808060141, 1733258469, 2788458722, 378507828, 381894334, 479539744, 2444015584, 2249662805, 2787409714, 657251520, 1345616389, 3090236840, 267307437, 3981667501, 74631321, 1964354072, 2715853608, 4104935066, 1334112750, 4191621995, 1656929073, 1861243579, 244444, 3362284314, 134311991, 1852270549, 3159151434, 1640704288, 3088641943, 1948225747, 3667374900, 2202794146, 2920735936, 2337564570, 1647964491, 4134515451, 1965434644, 3197075424, 829601355, 2204777624, 2136944439, 4185913265, 3542477913, 3091933300, 1118443454, 3745259966, 2520027836, 2781231560, 2915220876, 564277994, 822015011, 1379937291, 2722474785, 1218939570, 3501333838, 4078323044, 3684710418, 1526020202, 3131587927, 4043529432, 730571897, 886573602, 818819756, 3409041567, 830124092, 1223786420, 3132940929, 2154652879, 1679530216, 3452620280, 2182280823, 512846427, 4089413393, 373488299, 3819255365, 3449606766, 3480824632, 4234488643, 4046863316, 1513269183, 1506334027, 621697977, 433854108, 3541679856, 1400410418, 2141627584, 1562525351, 1331302028, 199118424, 443810273, 306026565, 4112476180, 1139182915, 4219693298, 2640808574, 182075151, 1740347153, 1474493097, 1236294634, 3606753984, 196355684, 81239282, 678735383, 2926087175, 2750156681, 566683886, 3852056253, 3476002303, 2016691128, 1459497682, 3951848669, 4067018519, 30527808, 3677188811, 233304322, 2833916215, 3384222665, 3042789987, 3962613137, 136541814, 1608978331, 1411010070, 2335356494, 2045267314, 4142759593, 894876754, 2330015168, 2084075293, 1144566570, 1701112442, 1494664734, 2982690363, 1228320068, 2236307761, 2676272933, 4104643768, 3960077911, 2702828124, 3304847689, 2184085506, 3100541750, 4127647589, 1998419315, 454561155, 3995817730, 3429341603, 3572710753, 660441293, 3657477224, 452287420, 3668616679, 278731372, 2132959944, 1938675008, 4224421098, 2697199832, 3816409502, 565935791, 3537382256, 3586286049, 1830651233, 792630272, 2664918051, 279297496, 1882198766, 945411493, 2100699110, 3201476566, 1931755294, 417919827, 1637743954, 638608460, 1883963141, 2843167142, 4235248152, 420613841, 3866561289, 2653757343, 2654359293, 1556953166, 3643439142, 2629929586, 834299126, 1194053197, 4113657620, 129191449, 1494024386, 2155576712, 3999639131, 2544583850, 2507277255, 4177151029, 3789090318, 119398457, 2055355747, 3069253613, 1336797027, 3244394909, 1637843824, 1829462411, 2734915922, 4080696404, 930435208, 3687244240, 3398962240, 3817285304, 698596291, 3032930043, 534551066, 1918301324, 2725343866, 3239818742, 3011317124, 2019767805, 2175184768, 1773111923, 1192902251, 1428120824, 2449845031, 415055422, 2063042554, 4019279740, 1361127028, 3342270792, 2892894026, 1576806783, 2202224108, 3937435165, 1864818170, 2875324927, 4023117317, 1559602320, 3469442705, 63585731, 2766325334, 294734635, 3088659740, 4208178205, 855601438, 3187101044, 1385259319, 307974840, 3369165354, 2587699266, 3745634036, 2918685014, 2107843385, 3271752144, 2472323234, 1615116979, 3223534448, 1861834259, 657520876, 4060223820, 2980572494, 687855422, 1624920803, 2564777073, 1854872249, 2387961989, 2211081799, 1486216040, 2332370420, 3716149851, 1357472535, 479322871, 2572874571, 1482802435, 3454531485, 1433026434, 3926240214, 407583992, 1002734491, 3297264195, 125920644, 2246753396, 83916398, 3115922748, 1463503462, 4063665846, 3046396228, 3243975783, 984547455, 1941121230, 2741549938, 2829832406, 1210470884, 173327095, 573780890, 2081355089, 683780908, 1037522593, 3199252454, 4025458367, 1014687592, 1144594355, 2218957760, 3798954230, 2090155116, 1776940964, 788806433, 1441496496, 1829040169, 4191946183, 4096519190, 3458341189, 1734256207, 3095521092, 2827945599, 2804619226, 1326185800, 3418934669, 45700547, 2660197360, 1795836651, 4156926330, 2648681952, 2211962828, 3428387003, 3953175632, 439018461, 2569510078, 2338796800, 3974950429, 1450683306, 518083382, 87279452, 4050156660, 2307737491, 3977667049, 2711558859, 3289463679, 423475256, 1372993108, 1501284676, 3352723034, 4147954981, 2976846232, 499427108, 326921077, 1216747286, 4166331174, 2084793940, 1179833839, 2352369000, 1282895211, 4051518969, 2054197302, 149331642, 3877067793, 1578588478, 645608260, 1928612259, 4170796304, 768753237, 1000163524, 951646309, 2034792515, 2919734205, 1914546245, 2818183434, 632670183, 1391173106, 2500215518, 3452702172, 32310571, 2551886184, 4197990504, 1450456199, 1746057290, 2626602233, 708665426, 2853939009, 320773589, 876874713, 4022517863, 620770677, 1577261331, 530616250, 1719125587, 2794667632, 1800588830, 3465726635, 1204766977, 3641777572, 4055772324, 4219679078, 2443146623, 3880020014, 1510427752, 1631727734, 2915233985, 1805230686, 936132400, 1845039630, 3768192875, 258830761, 306183279, 1177238233, 2421884311, 1471087690, 563401593], "pos": 5}, "closed": [], "method": {"invalid": 0}, "failures": [], "requested": ["fc72a620-db46-4f17-b6ba-7922b2682893"]}', 0, 1, 1, NULL, '7de500b2d21d5c3eb6e34b629d34ebb9');
INSERT INTO public.experiments VALUES (6, 'error', '', '[]', 'alice', 'ERROR', '{"pbs": {"launcher": null, "pbsbatch_args": null, "slots_per_node": null}, "data": {}, "name": "error", "debug": false, "slurm": {"gpu_type": null, "launcher": null, "sbatch_args": null, "slots_per_node": null}, "labels": [], "project": null, "internal": null, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "source_trial_id": null, "smaller_is_better": true, "source_checkpoint_uuid": null}, "security": null, "profiling": {"enabled": false, "sync_timings": true, "begin_on_batch": 0, "end_after_batch": null}, "resources": {"slots": null, "weight": 1, "devices": [], "priority": null, "shm_size": null, "max_slots": null, "allocation": null, "agent_label": null, "resource_pool": null, "is_single_node": null, "native_parallel": false, "slots_per_trial": 1}, "workspace": null, "data_layer": null, "entrypoint": "python3 train.py", "bind_mounts": [], "description": null, "environment": {"image": {"cpu": null, "cuda": null, "rocm": null}, "ports": {}, "pod_spec": null, "proxy_ports": [], "registry_auth": null, "add_capabilities": [], "force_pull_image": false, "drop_capabilities": [], "environment_variables": {"cpu": [], "cuda": [], "rocm": []}}, "integrations": null, "log_policies": [{"name": "CUDA OOM", "action": null, "signal": null, "actions": null, "pattern": ".*CUDA out of memory.*"}, {"name": "ECC Error", "action": null, "signal": null, "actions": null, "pattern": ".*uncorrectable ECC error encountered.*"}], "max_restarts": 0, "optimizations": {"mixed_precision": "O0", "gradient_compression": false, "aggregation_frequency": 1, "grad_updates_size_file": null, "auto_tune_tensor_fusion": false, "tensor_fusion_threshold": 64, "average_training_metrics": true, "tensor_fusion_cycle_time": 1, "average_aggregated_gradients": true}, "hyperparameters": {"lr": {"val": 0.1, "type": "const"}}, "reproducibility": {"experiment_seed": 536808114}, "scheduling_unit": 100, "retention_policy": null, "checkpoint_policy": "best", "metrics_retention": null, "records_per_epoch": 0, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints", "propagation": "rprivate", "storage_path": null, "container_path": null, "checkpoint_path": null, "save_trial_best": 1, "tensorboard_path": null, "save_trial_latest": 1, "save_experiment_best": 0}, "preemption_timeout": null, "tensorboard_storage": null, "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 0}, "perform_initial_validation": false}', 'name: error
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b08008a5e0d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 11:31:22.283588+00', '2026-11-30 11:31:23.044369+00', '{"rng": {"key": [3274880351, 2945741416, 2218008867, 3146452442, 4182999779, 2266829039, 212257395, 793285583, 1323561539, 58841634, 2042398409, 3028684538, 2896410668, 1397719048, 2039479332, 2153272572, 3153963884, 4202100544, 3615593732, 3388588556, 1779128814, 386839542, 426467626, 2608964010, 1340611785, 4103953767, 455759160, 1711084479, 4079898798, 3797021706, 3816588647, 6926484, 2319693394, 2964929791, 835492825, 4048215830, 1319665347, 4005032660, 1450273826, 1480990902, 1307255005, 1753898659, 1299065500, 877654291, 3318939968, 3913279946, 1438858301, 3005367085, 3655039400, 1573472815, 2098294251, 2485366733, 308515573, 1766892036, 3514305023, 1925264813, 2524693205, 1301237174, 1862535332, 722603534, 644141774, 338387872, 2912696285, 2411306250, 3583428144, 91826466, 3541923328, 3695555297, 1380003703, 2012829832, 501814959, 1092602454, 2325595727, 2957006004, 970483739, 1748031309, 3112136742, 1704885424, 2133596563, 1970553438, 4164571304, 4088928115, 2316798238, 257999638, 875930138, 105137736, 4226220516, 2038714954, 4130380123, 697920607, 2778244943, 1960022935, 2805735889, 3898453426, 2014308752, 1962297469, 1888391270, 1238281126, 2462501935, 1895710526, 1739258629, 3290539745, 2953718318, 344732317, 3200367182, 1189697064, 1030086873, 3792596666, 3488859726, 1101762006, 2014852494, 2947621879, 48482264, 2820025317, 2125113461, 2404208283, 1762266919, 849216094, 228539578, 2552312843, 3960038881, 1045443917, 1764289949, 3701037914, 1424325177, 2266637024, 1268364181, 3562226897, 1725215788, 339988204, 3894947517, 710096841, 3007764903, 484351695, 4071841701, 2930183739, 1030252122, 3871469354, 3235045297, 1963525300, 2015441830, 3250211204, 925137365, 3680537873, 3457054791, 2466131835, 135597497, 3803865447, 2765547068, 1353264045, 980137159, 445917131, 1062443235, 3508929399, 2261578787, 2624159143, 263250851, 417288591, 2121446746, 1245494463, 1869628903, 2402607424, 3119490384, 2816379080, 731233064, 3575679347, 3136626372, 2314505794, 1848683866, 199085315, 3280353931, 2757292903, 3311564420, 1968192103, 728583206, 1406703947, 2624426073, 506249396, 826206545, 1120201922, 442378478, 4045363203, 1667453610, 552218954, 800270672, 1848882580, 3680091771, 485082755, 2597841468, 1261624093, 670933035, 2739767407, 643826661, 3976570747, 3653567306, 3453550559, 4169365488, 1033102266, 2263984550, 2913120833, 2322992699, 3561194039, 2598912822, 3208110579, 3701773644, 4238683201, 494860117, 1913607024, 3699592991, 1398491738, 4292507468, 2835634524, 1413145450, 3718750855, 1175866363, 1652325366, 1843666448, 873333330, 94788468, 1117687310, 1930207394, 4122208155, 3478349239, 1923836124, 2660404718, 2687022172, 3050511964, 3599977937, 1615353194, 1024419242, 1176586435, 3546836849, 4090248137, 2802146185, 2684600862, 4134883122, 3606996860, 2499915455, 1180802202, 3129627903, 2319704453, 4255805566, 2981791321, 122369782, 1616547372, 1708394007, 1854552356, 336512868, 718772311, 2987521345, 1529432467, 3468902904, 3566886768, 3982342200, 4150313754, 2043477797, 2972215990, 3143975797, 2529806288, 1894443131, 1563949781, 983930869, 561155213, 2238747251, 3490666198, 2345585051, 247625069, 150382933, 2474801903, 1085039386, 4042653702, 1366712947, 2151866230, 3910366597, 1341196341, 3861097637, 491680982, 331873672, 2928089216, 3042470325, 2271113529, 2975264227, 195263516, 744678175, 3298985918, 3311924079, 2148855202, 269526305, 897949230, 137644875, 2013924652, 3537798655, 2785284544, 4176417700, 3033243326, 2703363060, 3079906834, 3983191147, 2465176670, 1175202598, 2531684515, 2941356440, 2049428955, 3138302944, 3347578841, 1262736628, 2041098161, 2151312680, 3124036929, 3437097124, 2205475636, 4160669311, 1098874974, 4057459887, 4124778657, 725412029, 38006161, 465710599, 2994789765, 980586557, 2499390911, 3256804923, 2502942312, 995975647, 2210909507, 255207623, 1651593527, 1158856756, 2593024422, 2687822982, 3684388880, 1538007430, 2993889443, 506647314, 2527469750, 1450805895, 445711544, 531994106, 3894711154, 1606586214, 1851158591, 4212339708, 2151262935, 141313834, 651568606, 1065626263, 2297277994, 3994164562, 3390268794, 1770719658, 1658491623, 781493638, 2700959838, 2359513844, 2307225710, 1335204641, 805799018, 1403026465, 3131025204, 348835240, 2918086868, 2998925003, 1981546084, 3091554669, 3244922075, 817525879, 3004382532, 2866151913, 2903681060, 2398068865, 422659045, 419155302, 4194022771, 3791316636, 955206778, 1248528574, 2805001338, 589597218, 3468379045, 2453618809, 1432593247, 1576884355, 2653783850, 714583234, 662220343, 2723065845, 1445744411, 98969660, 2786111132, 1811454249, 3147534396, 1204112709, 2280145760, 2635463552, 3836193011, 2439914861, 2684739986, 3717419782, 2073219771, 1729908978, 4216350925, 3699690950, 2285155755, 1524742004, 1483015144, 756332870, 4259493059, 728532620, 3927727146, 568417855, 3019846915, 3409595804, 2484029603, 2515194055, 2949659303, 2622839019, 3374118241, 2406450726, 1043651355, 3089017281, 3186070364, 3052792475, 3136858953, 2057874843, 1536776266, 1502871013, 2942943573, 2584745345, 1518225872, 1685919727, 37977113, 2570993424, 974544919, 2372206354, 1230545652, 588432325, 4058358102, 3205098489, 121657543, 1891743706, 2549238499, 1374191530, 3774101243, 3566724517, 3202402621, 2505910698, 1385584377, 895459148, 1596702850, 3908940360, 221020694, 559266935, 366375683, 3865784724, 1211047877, 3691775768, 4216369077, 3025568928, 39355352, 842556573, 3117019641, 3070684425, 2007112727, 952229122, 1070023949, 690700831, 2614094314, 587319999, 2122502114, 1192241697, 2526555111, 2685280698, 1322068091, 4064046016, 554655363, 2542548043, 932901187, 2984650017, 772289196, 3728004791, 1667093396, 209201240, 2725965447, 1646792185, 3434162607, 37216424, 739612767, 2045868541, 1811997217, 89357588, 2375117430, 3069421660, 2719794560, 2161326818, 1827172554, 896823893, 2471270313, 1455825054, 3557374288, 1003213745, 194794125, 879453788, 3385141950, 2352932188, 257266864, 2384290965, 2326306636, 1532046446, 3215763898, 1578857387, 2170712306, 4106953220, 2162673685, 2748657537, 2035755583, 3827498270, 325189963, 279359812, 3943384897, 416278963, 189587774, 3475511143, 2371830433, 1851830545, 3226408942, 939836083, 2781863391, 3139531941, 4189098726, 1558153828, 3917509202, 2154285168, 2896018041, 1247098580, 3520701210, 2309101959, 3434079609, 3771580397, 2638362759, 2745282172, 930793994, 1039099702, 761410967, 1974840214, 672795521, 2056830556, 97365279, 904727374, 1965230556, 2426688579, 2860406282, 1427017089, 1492931604, 589099224, 3781737355, 4064694013, 3585383117, 1939764399, 2614027525, 1957683975, 1220890111, 3935576195, 1127529778, 111729723, 2180555500, 297303064, 4252933949, 1704167695, 836110674, 1466976759, 2009239596, 3281833874, 4230956272, 805700252, 1287113217, 2730243515, 590243897, 1101445575, 1818810207, 2516783585, 3688104255, 2248002388, 4102286075, 1385091026, 1377591630, 2275320772, 1970043973, 1804962815, 4147201097, 41056178, 4010366912, 4100373682, 1288448660, 1941416606, 2384844348, 1066529054, 2873768631, 2942529553, 2565323163, 970188545, 3388747708, 4024251457, 680631687, 57899768, 2492781090, 3675749263, 1863966080, 1426621553, 2893182439, 2603272658, 3932911219, 3271570503, 967270423, 2677205845, 1060394023, 1396095083, 3801800458, 1239202907, 3296899159, 980148086, 792884956, 3215753074, 1847137029, 412355554], "pos": 5}, "closed": ["f8d8c63d-56e3-43c6-8eca-a6fed624b433"], "method": {"invalid": 0}, "failures": ["f8d8c63d-56e3-43c6-8eca-a6fed624b433"], "requested": ["f8d8c63d-56e3-43c6-8eca-a6fed624b433"]}', 1, 1, 1, NULL, 'bbcbac7a4c880c936c6ba01c88b60cf0');
INSERT INTO public.experiments VALUES (4, 'completed', '', '[]', 'alice', 'COMPLETED', '{"pbs": {"launcher": null, "pbsbatch_args": null, "slots_per_node": null}, "data": {}, "name": "completed", "debug": false, "slurm": {"gpu_type": null, "launcher": null, "sbatch_args": null, "slots_per_node": null}, "labels": [], "project": null, "internal": null, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "source_trial_id": null, "smaller_is_better": true, "source_checkpoint_uuid": null}, "security": null, "profiling": {"enabled": false, "sync_timings": true, "begin_on_batch": 0, "end_after_batch": null}, "resources": {"slots": null, "weight": 1, "devices": [], "priority": null, "shm_size": null, "max_slots": null, "allocation": null, "agent_label": null, "resource_pool": null, "is_single_node": null, "native_parallel": false, "slots_per_trial": 1}, "workspace": null, "data_layer": null, "entrypoint": "python3 train.py", "bind_mounts": [], "description": null, "environment": {"image": {"cpu": null, "cuda": null, "rocm": null}, "ports": {}, "pod_spec": null, "proxy_ports": [], "registry_auth": null, "add_capabilities": [], "force_pull_image": false, "drop_capabilities": [], "environment_variables": {"cpu": [], "cuda": [], "rocm": []}}, "integrations": null, "log_policies": [{"name": "CUDA OOM", "action": null, "signal": null, "actions": null, "pattern": ".*CUDA out of memory.*"}, {"name": "ECC Error", "action": null, "signal": null, "actions": null, "pattern": ".*uncorrectable ECC error encountered.*"}], "max_restarts": 0, "optimizations": {"mixed_precision": "O0", "gradient_compression": false, "aggregation_frequency": 1, "grad_updates_size_file": null, "auto_tune_tensor_fusion": false, "tensor_fusion_threshold": 64, "average_training_metrics": true, "tensor_fusion_cycle_time": 1, "average_aggregated_gradients": true}, "hyperparameters": {"lr": {"val": 0.1, "type": "const"}}, "reproducibility": {"experiment_seed": 1576818471}, "scheduling_unit": 100, "retention_policy": null, "checkpoint_policy": "best", "metrics_retention": null, "records_per_epoch": 0, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints", "propagation": "rprivate", "storage_path": null, "container_path": null, "checkpoint_path": null, "save_trial_best": 1, "tensorboard_path": null, "save_trial_latest": 1, "save_experiment_best": 0}, "preemption_timeout": null, "tensorboard_storage": null, "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 0}, "perform_initial_validation": false}', 'name: completed
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b08008a5e0d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 11:31:22.234451+00', '2026-11-30 11:31:23.048338+00', '{"rng": {"key": [2366637165, 2208355033, 3254688803, 3462069159, 939224412, 1281945501, 3590522924, 1150270046, 944412752, 821343954, 314688044, 3800997482, 1206457014, 2402841550, 134759268, 996991593, 2797490600, 3269349319, 2513152429, 3059413896, 1648911089, 336530055, 4038445218, 3678101812, 2054746447, 3418023247, 1178899761, 3515125866, 4163951723, 792831895, 652134373, 4031072477, 133047819, 3775743176, 2873923727, 2397753043, 2318700234, 3378693430, 54662384, 3254649277, 3587536263, 1882954681, 301876842, 2647760813, 4244519754, 4108614868, 3457208225, 1280524815, 2499858375, 967620568, 3469237917, 1454888232, 602287131, 408928618, 923432927, 115139190, 2897580252, 664340880, 3119990353, 1637679009, 65743108, 2930702146, 1497974190, 4213325042, 2761376865, 3983074853, 1717509685, 1034757998, 2343657246, 1394304561, 680894079, 2342791359, 1312198180, 1492803225, 3926527546, 392662491, 3573675033, 2319970829, 1519814385, 592230384, 3834099982, 2927698087, 3924135021, 1076027733, 1197998292, 3245847023, 1660250980, 3838617308, 2165984092, 1606518021, 1704537129, 2608297795, 2774149848, 4073599170, 1010610723, 2187637654, 2255438013, 993546069, 1328560840, 3523607270, 2926379938, 1414582671, 3764173874, 2626436508, 898456328, 545551899, 2328595028, 1175548460, 552808544, 402383407, 3999870665, 2642202830, 1001671842, 2821337110, 3248022227, 2695291139, 2169837283, 1463970351, 1483300790, 3091732147, 1950220373, 965162775, 587784856, 1573048138, 1540496992, 2446014926, 3230829869, 525027143, 2110169114, 702776951, 3834945782, 2510454895, 1668897959, 3823351478, 662299668, 1269476512, 2580862844, 1930313442, 1309243640, 387854758, 3228637721, 1994693357, 1423848871, 4067538294, 997979329, 1927750877, 2788708174, 3676074867, 2711020728, 3782529564, 3261617558, 3834746796, 290279563, 2833990079, 3893518939, 352112495, 852786779, 3227212695, 1940710488, 1739106761, 4159331254, 1847724477, 4109709456, 2766745940, 311975045, 2102924308, 1646908346, 2140658831, 3709731675, 3996681016, 2372794621, 443075541, 3469814287, 315849620, 1501734911, 3209348038, 1512451272, 3106366409, 3421754874, 1477481298, 2920211405, 2409338124, 3857010459, 2933443685, 611866103, 946075881, 1852165510, 3658730024, 459392540, 2209921015, 1894710282, 2444956342, 2730195238, 4101697145, 3437276179, 2647531471, 1021640635, 1948494740, 2106387235, 1540019395, 1354191664, 1071496860, 1846937647, 1520845033, 3179501283, 2186701066, 1137214440, 3598423448, 2159532240, 2759274134, 3693032582, 4276685255, 1218171256, 4089156017, 531082404, 1663736081, 19181283, 373774542, 801207599, 1582719664, 2215756302, 1654895983, 309819334, 1186862338, 1166783689, 3165335022, 1392577265, 3735800474, 1026798819, 3275868655, 1974029975, 1129109510, 543287955, 800814049, 4201499150, 14280625, 1177595483, 2978526917, 1760256368, 2698085143, 1599335810, 2568364945, 1257966410, 152935308, 1283598233, 622993504, 464938434, 1123259572, 1994217604, 1062357380, 2597541180, 1792294633, 577575409, 417077102, 1543857743, 1027503501, 1999837148, 494565117, 3023457740, 425738044, 1175098914, 4232514440, 361938762, 1406941996, 3902967938, 2799979796, 1217996462, 4168513, 309208840, 3294072860, 3723014703, 4203330968, 368627916, 3132071686, 677523125, 1104724251, 747626676, 2927463697, 644244983, 3566847504, 3453133344, 3491018147, 3078432629, 3276559715, 2030730919, 2290892307, 1031269648, 662515809, 4095785717, 1828052330, 2612153103, 1250099982, 1890238456, 2895044766, 390785636, 2110153308, 3514118763, 2149004384, 1236815834, 2180172788, 1939088813, 33423575, 3632949426, 156746171, 3932567866, 4161033936, 2324051424, 2448945390, 2306402826, 861404059, 1632282670, 3014769787, 776364801, 1467194774, 3084687603, 3168992117, 1128772475, 1006483, 3789972058, 1432384973, 507494058, 1357092428, 4192907564, 1962548345, 3345936238, 676990260, 2361965505, 2491717541, 1623407253, 398062867, 421135000, 3993099149, 470119616, 78455371, 1256405814, 479785354, 726164098, 1309442186, 935784484, 967183921, 1911613069, 288643482, 4088907762, 2976333858, 516871472, 550054453, 2659331004, 3169511788, 316564488, 2375448027, 2658261301, 2856650072, 2105893247, 2801047121, 1646708210, 3637519112, 3973950086, 1140461986, 796184378, 1039165740, 308673615, 1747023116, 3650947922, 123050122, 2083479412, 982460594, 1897441191, 261839276, 1733497552, 2116178029, 3437673832, 3115795292, 1877856426, 2472504800, 3474579815, 3663987901, 2275449119, 328698480, 2956855588, 194315501, 1857461505, 827078101, 229813768, 1828879781, 517988371, 4285573085, 862507666, 3264939295, 64752640, 1568976457, 1048305322, 3542319436, 1083212081, 3873114485, 1284895047, 1690398436, 2138211393, 776816597, 2239366960, 2136885388, 3061248095, 1308664914, 163346963, 528177641, 559615193, 159132390, 1987709759, 2073159432, 2389584077, 2639975062, 2165354308, 4287620104, 1749227631, 1320125995, 3961389035, 4141398991, 109401508, 3689418346, 2240325, 1871398076, 3635052743, 525644076, 3311851396, 1126719421, 61869278, 3126637282, 1709185181, 2271337964, 120285476, 2381929078, 3100208940, 2285889273, 2923380935, 4189768539, 1713039922, 3191910355, 4044678593, 3012889423, 2898394801, 105021623, 664118348, 3117179266, 2823832187, 2660449989, 212291584, 192597258, 1358191515, 3668953724, 3711390314, 400499749, 2899160790, 1548389360, 1057091182, 3177393541, 1984307231, 545219717, 200221111, 4245950354, 1700987548, 2893952022, 1433760097, 1497643208, 2415665834, 3983343978, 430830036, 1200185951, 2776476976, 871982698, 3768420891, 3176511457, 2605569532, 3468587247, 106544172, 3694555165, 330497201, 1967583075, 4151926263, 524037278, 1281431066, 3730949682, 3252026320, 3869898360, 4085934220, 2409763484, 2338158991, 370541813, 3461396469, 3151303492, 702550491, 3220239734, 3077662188, 2702544974, 634945721, 2274449785, 1214242422, 971544995, 2827774113, 1861554124, 1753635042, 3165699286, 1521537431, 299056500, 1935743176, 2452287622, 40857267, 1142040862, 2449441576, 2166453083, 2092268793, 3153410061, 681560320, 698266166, 564249081, 1844509077, 4036246955, 333912242, 3476079439, 2637011114, 3646913997, 4171767269, 4140984120, 1138757260, 2390938481, 3218727566, 2921892210, 2423092797, 3180538662, 3106666123, 2086399556, 1588480215, 2088645432, 680037603, 2678183504, 1008565506, 1176652934, 1349612889, 1386153723, 2345516789, 454666245, 1654454063, 2729030608, 3220958367, 1513098938, 1623548699, 751566896, 1012943912, 1921876168, 2568950728, 1326395418, 3897628205, 3315450334, 2561940927, 3495010511, 3558798959, 1650747738, 2073479459, 3907408517, 1741929191, 2361861645, 3283818160, 218147229, 852230362, 1537986247, 276516345, 939477605, 3514856264, 2714013524, 2975539655, 1051191554, 239477761, 846966148, 3550460871, 1420981963, 1239840271, 3505205183, 3455011963, 3081992308, 700758836, 25343280, 495177615, 3324532155, 3732225546, 798846710, 2368689218, 996583218, 3858635241, 1251841237, 2756671109, 2164808409, 3577418059, 3128133201, 1334416328, 956825781, 703637024, 2912498463, 678728187, 2328156686, 3412685887, 56954109, 1400826696, 3708062862, 3908841204, 2930100423, 1726770343, 3812868803, 4230303764, 3611418294, 3072578693, 2037540272, 636250114, 78821022, 3220494311, 1509904171, 1958994537, 1158550266, 3313954802, 733056010, 2606123811, 1658319792, 370822033, 508207633, 666995422, 1433207971, 2700228264], "pos": 5}, "closed": ["bc8147c5-6ff8-4078-b9fd-2639bb7f0f6d"], "method": {"invalid": 0}, "failures": [], "requested": ["bc8147c5-6ff8-4078-b9fd-2639bb7f0f6d"]}', 1, 1, 1, NULL, '204c4050deb6a92c179f82709636a431');
INSERT INTO public.experiments VALUES (5, 'canceled', '', '[]', 'alice', 'CANCELED', '{"pbs": {"launcher": null, "pbsbatch_args": null, "slots_per_node": null}, "data": {}, "name": "canceled", "debug": false, "slurm": {"gpu_type": null, "launcher": null, "sbatch_args": null, "slots_per_node": null}, "labels": [], "project": null, "internal": null, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "source_trial_id": null, "smaller_is_better": true, "source_checkpoint_uuid": null}, "security": null, "profiling": {"enabled": false, "sync_timings": true, "begin_on_batch": 0, "end_after_batch": null}, "resources": {"slots": null, "weight": 1, "devices": [], "priority": null, "shm_size": null, "max_slots": null, "allocation": null, "agent_label": null, "resource_pool": null, "is_single_node": null, "native_parallel": false, "slots_per_trial": 1}, "workspace": null, "data_layer": null, "entrypoint": "python3 train.py", "bind_mounts": [], "description": null, "environment": {"image": {"cpu": null, "cuda": null, "rocm": null}, "ports": {}, "pod_spec": null, "proxy_ports": [], "registry_auth": null, "add_capabilities": [], "force_pull_image": false, "drop_capabilities": [], "environment_variables": {"cpu": [], "cuda": [], "rocm": []}}, "integrations": null, "log_policies": [{"name": "CUDA OOM", "action": null, "signal": null, "actions": null, "pattern": ".*CUDA out of memory.*"}, {"name": "ECC Error", "action": null, "signal": null, "actions": null, "pattern": ".*uncorrectable ECC error encountered.*"}], "max_restarts": 0, "optimizations": {"mixed_precision": "O0", "gradient_compression": false, "aggregation_frequency": 1, "grad_updates_size_file": null, "auto_tune_tensor_fusion": false, "tensor_fusion_threshold": 64, "average_training_metrics": true, "tensor_fusion_cycle_time": 1, "average_aggregated_gradients": true}, "hyperparameters": {"lr": {"val": 0.1, "type": "const"}}, "reproducibility": {"experiment_seed": 55567304}, "scheduling_unit": 100, "retention_policy": null, "checkpoint_policy": "best", "metrics_retention": null, "records_per_epoch": 0, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints", "propagation": "rprivate", "storage_path": null, "container_path": null, "checkpoint_path": null, "save_trial_best": 1, "tensorboard_path": null, "save_trial_latest": 1, "save_experiment_best": 0}, "preemption_timeout": null, "tensorboard_storage": null, "min_checkpoint_period": {"batches": 0}, "min_validation_period": {"batches": 0}, "perform_initial_validation": false}', 'name: canceled
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b08008a5e0d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 11:31:22.26347+00', '2026-11-30 11:31:23.058754+00', '{"rng": {"key": [3955603325, 1936742242, 4231534707, 1652229098, 4004577905, 2595786993, 3429311726, 2118871437, 3800089283, 50194264, 252039426, 2643929444, 2157973238, 2218096768, 627613074, 1703349474, 1096543703, 3295777425, 2154910162, 1701705267, 820573093, 4136788415, 2931663492, 4181410403, 464351733, 1668054194, 1740372135, 3307689125, 3849950486, 1713458826, 1523384850, 2822918743, 888082689, 113165002, 190791544, 2053066995, 3816516403, 371197723, 2651641322, 2446514600, 337594295, 909692546, 445822734, 2732559252, 149092681, 2272051653, 4039751594, 2695734981, 1383359663, 2629026997, 4143174664, 2207076736, 3866842757, 2280166971, 1138100005, 3274976652, 1642812119, 2632510472, 3065637352, 3539369761, 329841976, 1288555607, 1846442108, 1366448245, 1827843513, 3001287206, 2796339742, 3496352010, 1593567023, 3832503034, 584625655, 123771343, 407909936, 2088411875, 3286858611, 493909163, 2918727741, 2571681721, 1233385138, 2347251631, 1350858048, 3034332876, 185030129, 890485103, 2155113060, 560781881, 716058271, 3308568431, 1778723927, 230691581, 3417188251, 2573837519, 2858513320, 2644514628, 2035089459, 2065151358, 2026453103, 3193131179, 1765148751, 99269165, 3299623591, 2271487324, 3920406062, 3550534436, 1034940720, 2517520853, 1337165444, 3336158934, 4237085204, 2208305786, 406061316, 1685676500, 3238061997, 568387427, 269022835, 3478038936, 1755178461, 3167850558, 3638073518, 4246754173, 702536256, 1611459876, 123310287, 746657441, 2276085250, 2219749066, 3635800483, 1863825712, 1849435782, 819592421, 2953673777, 2798372788, 560612153, 2166583135, 433419375, 761906183, 3515077056, 2899349224, 1287546463, 2445505828, 1280952744, 2531994469, 2826710007, 3106912861, 3532677955, 2590646246, 242210502, 3418399604, 2060758207, 603232193, 1471595819, 3490255863, 1795493078, 3355981547, 2701159444, 1312557676, 3447270965, 1174845318, 168231234, 2961366374, 964443781, 1226636266, 2516009967, 1801125354, 945147065, 84052720, 2273692495, 1632905849, 556466695, 1667728439, 4203051763, 2633722367, 390322555, 1796572830, 1265249829, 3655897089, 738559683, 3470541504, 1051424495, 3348603025, 2717690057, 4268961027, 3120174155, 325138116, 2074139470, 1653121327, 2736284071, 2263298347, 1590877575, 3307594810, 1419134341, 1851625637, 1984903113, 4037206522, 2670340441, 1552175752, 288307583, 1808221720, 2137584355, 10921059, 2653230569, 1442867137, 399641832, 4239512935, 2958680491, 2476426202, 4019410827, 188656665, 3727651278, 3157447708, 4259168755, 1164575935, 1116646901, 2981491625, 1712377194, 2317169571, 40279354, 32212717, 616743918, 1885761664, 3464690512, 4040206255, 3563374787, 609603269, 2563441129, 4235519747, 1155769821, 2183537037, 1515493047, 1060772197, 2141485465, 3160494879, 175496948, 1662414616, 2766382703, 681140680, 416607381, 1661993713, 4047359168, 1953501802, 1162117341, 4179646103, 876534129, 566331587, 3806382208, 1971797104, 3555000608, 1716321016, 1524606541, 2178398394, 2275382632, 2882256557, 3521921964, 397774744, 2434640397, 3244291550, 307481354, 3571860094, 3617369913, 3980429601, 1969626529, 3697159072, 379445607, 1620824950, 1984371269, 1208440711, 4003416447, 3807221966, 2787614041, 3113451036, 1739063624, 3048999679, 1771516298, 2159322388, 4247832402, 1426470066, 1476912124, 408356359, 1293825887, 226450169, 1317484690, 3181366984, 1966214676, 227656699, 3198909333, 1940146426, 3682860802, 843822183, 742967566, 3704376003, 2871570812, 109063388, 3301922719, 363850371, 1169345864, 2363598114, 3494031067, 3950651599, 1714259657, 2171453001, 1722242596, 2568025030, 3758065647, 104633491, 389748043, 2973885130, 1568230247, 4245052608, 1837588131, 3030167443, 3193809820, 2056916148, 3445987524, 32019608, 2241257665, 1090581011, 451070168, 3509516707, 1261582860, 1126480052, 1152516529, 3873209609, 168472886, 4202263820, 2612931626, 2615728965, 3979337141, 3187156965, 3224483482, 2263182086, 2527820961, 390968367, 3524676090, 1879585974, 3054166191, 700070009, 2223195631, 1475330825, 2276338286, 2795656371, 1158275323, 2569820921, 2811318042, 4292222378, 3720442162, 749186289, 1638343823, 3075999166, 503205925, 3131441110, 3008272819, 1291510275, 2282051635, 3578222669, 2778534675, 3061859948, 2011709708, 2192433809, 3227927647, 2870765563, 2887898759, 3467050420, 1680749926, 2460830294, 236492499, 1998504180, 3992974680, 4216957729, 629578012, 3869917291, 995490759, 500075228, 3069322315, 3034219447, 123164269, 3376897772, 3376779331, 157241634, 395709645, 2251592301, 2015253510, 2919488621, 3523271631, 640990761, 2383788051, 4251832471, 1468416161, 2145587738, 3356686664, 795338486, 2303416947, 286353883, 1095928438, 4228693575, 2001474521, 1290265676, 276414108, 1854842844, 3341842288, 52776776, 2485465795, 963824989, 4197460949, 2631623228, 984557776, 926182809, 1731128343, 3898019661, 964286617, 606904876, 2099600313, 2169911549, 3731859354, 2517619462, 4289982345, 2646850441, 2969514409, 3778299608, 2460733178, 720442750, 1462956832, 3022368917, 563182319, 3437412964, 1141230531, 2730828981, 2088412499, 1860686827, 2844292796, 494893865, 880581167, 156973673, 2141310433, 3877995334, 4221648275, 3169676080, 3794876212, 2481279227, 1245724937, 1216039519, 1293330725, 1869485046, 1701796530, 466595870, 2348818976, 2686198170, 1679464073, 3424806973, 1440901265, 2227674242, 4212850747, 167346351, 2833205646, 421228482, 151373644, 3596151556, 1072792662, 343326214, 3593684977, 2204502869, 931834028, 4266528319, 3193432416, 3614797410, 1386476946, 354463066, 2181846536, 335915979, 1148592336, 736979858, 3116316518, 1742623391, 504221876, 1862902540, 2734208576, 2159606092, 3664971558, 3427404680, 1941313222, 1488858069, 736336569, 490397306, 3824006706, 4017495280, 435750023, 735567342, 614033022, 2167394805, 1998527924, 1094166976, 2181751770, 1177887504, 1762834101, 303632488, 119072341, 2437372053, 2819392827, 271019455, 2752968928, 1330261951, 2406131842, 3284821115, 1733304681, 3048037779, 3522966281, 2781177663, 3447239637, 3730163138, 3457716863, 3559978543, 2681583063, 1841303142, 1539134709, 1389596995, 79928429, 3862301914, 3278085327, 2937548483, 2443305565, 1079183756, 948617904, 3643707713, 2461800708, 2919216562, 2388137230, 4110179784, 3321042428, 1826081365, 1764616737, 3854384078, 1070609234, 3260289512, 2829694051, 282808884, 1908966869, 2969160617, 3744958960, 1268205354, 3700628241, 3150020433, 1273349053, 2642399081, 3557880987, 4200317879, 1246131452, 2471991419, 1149547192, 2037015167, 2661912697, 2242470684, 3191542022, 3451285569, 1799838588, 3947150438, 1619291605, 1539615574, 4291871973, 421816614, 18984365, 3136578877, 311906655, 2060087843, 891716594, 3329989987, 2970392173, 4055238419, 3941287689, 663305240, 2389261479, 2703949097, 924237218, 201798099, 2136271197, 324548591, 2868694796, 1822200986, 3101385720, 2575607028, 192449137, 3615005106, 266678320, 2052774632, 2603520870, 2913814526, 2479380489, 3359880002, 873518002, 286178654, 1253567983, 3330553940, 1810481610, 579316548, 150509821, 1370953711, 151563880, 1647701409, 2144584719, 2942299580, 1879989035, 181297093, 1342190804, 2071684563, 2417572311, 2606191955, 2149233027, 3264201454, 2566334755, 1367994608, 3538081339, 1923527873, 2638227792, 2812855203, 3416986306, 3528334864, 421997739, 752285889, 3094194187, 845402621, 2310346798, 3404419027, 2488159287, 2533770872, 2873219009, 4237547005], "pos": 5}, "closed": [], "method": {"invalid": 0}, "failures": [], "requested": ["d5837822-5517-46e8-9a85-ab2a4f3717ff"]}', 0, 1, 1, NULL, 'bce73dbea3d4d13005714d09b0a8a8f6');


--
-- Data for Name: jobs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.jobs VALUES (2, 2, 1, '102', true, false, 'PENDING', 'PENDING', 'Resources', 0, 'node1', '@JOB_ROOT@/exp-2/trial-2/job-1.sh', '{"err": 0, "out": 0}', '2026-11-30 11:31:22.483528+00', NULL, 'det-2-2-1-bfd167be', 0);
INSERT INTO public.jobs VALUES (1, 1, 1, '101', true, false, 'RUNNING', 'RUNNING', 'Resources', 0, 'node1', '@JOB_ROOT@/exp-1/trial-1/job-1.sh', '{"err": 0, "out": 24, "policy_hits": []}', '2026-11-30 11:31:22.368751+00', NULL, 'det-1-1-1-fc72a620', 0);
INSERT INTO public.jobs VALUES (3, 3, 1, '103', false, true, 'CANCELLED', 'CANCELLED', 'Resources', 1, 'node1', '@JOB_ROOT@/exp-3/trial-3/job-1.sh', '{"err": 0, "out": 0}', '2026-11-30 11:31:22.497259+00', '2026-11-30 11:31:22.725982+00', 'det-3-3-1-b6cab63a', 0);
INSERT INTO public.jobs VALUES (4, 4, 1, '104', false, false, 'COMPLETED', 'COMPLETED', 'Resources', 0, 'node1', '@JOB_ROOT@/exp-4/trial-4/job-1.sh', '{"err": 0, "out": 26, "policy_hits": []}', '2026-11-30 11:31:22.51523+00', '2026-11-30 11:31:23.025917+00', 'det-4-4-1-bc8147c5', 0);
INSERT INTO public.jobs VALUES (5, 5, 1, '105', false, true, 'CANCELLED', 'CANCELLED', 'Resources', 1, 'node1', '@JOB_ROOT@/exp-5/trial-5/job-1.sh', '{"err": 0, "out": 25, "policy_hits": []}', '2026-11-30 11:31:22.527012+00', '2026-11-30 11:31:23.025545+00', 'det-5-5-1-d5837822', 0);
INSERT INTO public.jobs VALUES (6, 6, 1, '106', false, false, 'FAILED', 'FAILED', 'Resources', 1, 'node1', '@JOB_ROOT@/exp-6/trial-6/job-1.sh', '{"err": 0, "out": 22, "policy_hits": []}', '2026-11-30 11:31:22.539574+00', '2026-11-30 11:31:23.025259+00', 'det-6-6-1-f8d8c63d', 0);


--
-- Data for Name: metrics; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.metrics VALUES (1, 1, 'training', 1, 'loss', 1, '2026-11-30 11:31:22.799645+00', 0, 0, false);
INSERT INTO public.metrics VALUES (2, 1, 'training', 2, 'loss', 0.5, '2026-11-30 11:31:22.799645+00', 0, 0, false);
INSERT INTO public.metrics VALUES (3, 1, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 11:31:22.799645+00', 0, 0, false);
INSERT INTO public.metrics VALUES (4, 1, 'training', 4, 'loss', 0.25, '2026-11-30 11:31:22.799645+00', 0, 0, false);
INSERT INTO public.metrics VALUES (5, 1, 'training', 5, 'loss', 0.2, '2026-11-30 11:31:22.799645+00', 0, 0, false);
INSERT INTO public.metrics VALUES (6, 1, 'validation', 5, 'validation_loss', 0.5, '2026-11-30 11:31:22.805519+00', 0, 0, false);
INSERT INTO public.metrics VALUES (7, 4, 'training', 1, 'loss', 1, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (8, 4, 'training', 2, 'loss', 0.5, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (9, 4, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (10, 4, 'training', 4, 'loss', 0.25, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (11, 4, 'training', 5, 'loss', 0.2, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (12, 4, 'training', 6, 'loss', 0.16666666666666666, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (13, 4, 'training', 7, 'loss', 0.14285714285714285, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (14, 4, 'training', 8, 'loss', 0.125, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (15, 4, 'training', 9, 'loss', 0.1111111111111111, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (16, 4, 'training', 10, 'loss', 0.1, '2026-11-30 11:31:22.850461+00', 0, 0, false);
INSERT INTO public.metrics VALUES (17, 4, 'validation', 10, 'validation_loss', 0.5, '2026-11-30 11:31:22.854601+00', 0, 0, false);
INSERT INTO public.metrics VALUES (18, 5, 'training', 1, 'loss', 1, '2026-11-30 11:31:22.87225+00', 0, 0, false);
INSERT INTO public.metrics VALUES (19, 5, 'training', 2, 'loss', 0.5, '2026-11-30 11:31:22.87225+00', 0, 0, false);
INSERT INTO public.metrics VALUES (20, 5, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 11:31:22.87225+00', 0, 0, false);
INSERT INTO public.metrics VALUES (21, 5, 'training', 4, 'loss', 0.25, '2026-11-30 11:31:22.87225+00', 0, 0, false);
INSERT INTO public.metrics VALUES (22, 5, 'training', 5, 'loss', 0.2, '2026-11-30 11:31:22.87225+00', 0, 0, false);
INSERT INTO public.metrics VALUES (23, 5, 'validation', 5, 'validation_loss', 0.5, '2026-11-30 11:31:22.874375+00', 0, 0, false);
INSERT INTO public.metrics VALUES (24, 6, 'training', 1, 'loss', 1, '2026-11-30 11:31:22.891988+00', 0, 0, false);
INSERT INTO public.metrics VALUES (25, 6, 'training', 2, 'loss', 0.5, '2026-11-30 11:31:22.891988+00', 0, 0, false);
INSERT INTO public.metrics VALUES (26, 6, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 11:31:22.891988+00', 0, 0, false);
INSERT INTO public.metrics VALUES (27, 6, 'training', 4, 'loss', 0.25, '2026-11-30 11:31:22.891988+00', 0, 0, false);
INSERT INTO public.metrics VALUES (28, 6, 'training', 5, 'loss', 0.2, '2026-11-30 11:31:22.891988+00', 0, 0, false);
INSERT INTO public.metrics VALUES (29, 6, 'validation', 5, 'validation_loss', 0.5, '2026-11-30 11:31:22.894477+00', 0, 0, false);


--
-- Data for Name: model_versions; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.model_versions VALUES (1, 1, 1, '00000000-0000-0000-0000-000000000004', 'v1', 'first', '', '{}', '[]', 'alice', '2026-11-30 11:31:23.402402+00', '2026-11-30 11:31:23.402402+00');


--
-- Data for Name: models; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.models VALUES (1, 'classifier', 'the completed run', '{"task": "vision"}', '["prod"]', '', 'alice', 1, false, '2026-11-30 11:31:23.3833+00', '2026-11-30 11:31:23.402402+00');


--
-- Data for Name: projects; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.projects VALUES (1, 1, 'vision', 'image models', 'alice', '2026-11-30 11:31:22.030485+00');


--
-- Data for Name: report_streams; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: searcher_events; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.searcher_events VALUES (3, 5, 5, 5, '{"validation_loss": 0.5}', false, '2026-11-30 11:31:22.878343+00');
INSERT INTO public.searcher_events VALUES (1, 1, 1, 5, '{"validation_loss": 0.5}', true, '2026-11-30 11:31:22.807569+00');
INSERT INTO public.searcher_events VALUES (2, 4, 4, 10, '{"validation_loss": 0.5}', true, '2026-11-30 11:31:22.855797+00');
INSERT INTO public.searcher_events VALUES (4, 6, 6, 5, '{"validation_loss": 0.5}', true, '2026-11-30 11:31:22.895603+00');


--
-- Data for Name: searcher_journal; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.searcher_journal VALUES (1, 1, 0, 'validation', 'fc72a620-db46-4f17-b6ba-7922b2682893', 0.5, 0, NULL);


--
-- Data for Name: shell_keys; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: state_changes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.state_changes VALUES (1, 'experiment', 1, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 11:31:22.11686+00');
INSERT INTO public.state_changes VALUES (2, 'experiment', 2, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 11:31:22.161474+00');
INSERT INTO public.state_changes VALUES (3, 'experiment', 3, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 11:31:22.202524+00');
INSERT INTO public.state_changes VALUES (4, 'experiment', 4, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 11:31:22.241264+00');
INSERT INTO public.state_changes VALUES (5, 'experiment', 5, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 11:31:22.266096+00');
INSERT INTO public.state_changes VALUES (6, 'experiment', 6, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 11:31:22.285099+00');
INSERT INTO public.state_changes VALUES (7, 'trial', 1, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 11:31:22.300144+00');
INSERT INTO public.state_changes VALUES (8, 'trial', 2, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 11:31:22.310674+00');
INSERT INTO public.state_changes VALUES (9, 'trial', 3, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 11:31:22.314425+00');
INSERT INTO public.state_changes VALUES (10, 'trial', 4, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 11:31:22.318048+00');
INSERT INTO public.state_changes VALUES (11, 'trial', 5, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 11:31:22.325713+00');
INSERT INTO public.state_changes VALUES (12, 'trial', 6, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 11:31:22.329386+00');
INSERT INTO public.state_changes VALUES (13, 'experiment', 3, 'ACTIVE', 'PAUSED', 'pause requested', 'alice', '2026-11-30 11:31:22.674764+00');
INSERT INTO public.state_changes VALUES (14, 'trial', 3, 'QUEUED', 'PAUSED', 'experiment paused', 'alice', '2026-11-30 11:31:22.676847+00');
INSERT INTO public.state_changes VALUES (15, 'trial', 1, 'QUEUED', 'RUNNING', 'job 101 running on node1', 'system', '2026-11-30 11:31:22.71663+00');
INSERT INTO public.state_changes VALUES (16, 'trial', 4, 'QUEUED', 'RUNNING', 'job 104 running on node1', 'system', '2026-11-30 11:31:22.721736+00');
INSERT INTO public.state_changes VALUES (17, 'trial', 5, 'QUEUED', 'RUNNING', 'job 105 running on node1', 'system', '2026-11-30 11:31:22.724551+00');
INSERT INTO public.state_changes VALUES (18, 'trial', 6, 'QUEUED', 'RUNNING', 'job 106 running on node1', 'system', '2026-11-30 11:31:22.733661+00');
INSERT INTO public.state_changes VALUES (19, 'experiment', 5, 'ACTIVE', 'STOPPING_KILLED', 'kill requested', 'alice', '2026-11-30 11:31:22.906931+00');
INSERT INTO public.state_changes VALUES (20, 'trial', 5, 'RUNNING', 'STOPPING_KILLED', 'experiment killed', 'alice', '2026-11-30 11:31:22.908161+00');
INSERT INTO public.state_changes VALUES (21, 'task', 1, NULL, 'QUEUED', 'submitted with det sbatch', 'bob', '2026-11-30 11:31:22.923649+00');
INSERT INTO public.state_changes VALUES (22, 'task', 2, NULL, 'QUEUED', 'submitted with det sbatch', 'bob', '2026-11-30 11:31:22.929952+00');
INSERT INTO public.state_changes VALUES (23, 'task', 3, NULL, 'QUEUED', 'submitted with det sbatch', 'bob', '2026-11-30 11:31:22.937379+00');
INSERT INTO public.state_changes VALUES (24, 'task', 4, NULL, 'QUEUED', 'submitted with det sbatch', 'bob', '2026-11-30 11:31:22.945513+00');
INSERT INTO public.state_changes VALUES (25, 'task', 5, NULL, 'QUEUED', 'submitted with det sbatch', 'bob', '2026-11-30 11:31:22.953651+00');
INSERT INTO public.state_changes VALUES (26, 'task', 1, 'QUEUED', 'RUNNING', 'job 107 running on node1', 'system', '2026-11-30 11:31:23.017504+00');
INSERT INTO public.state_changes VALUES (27, 'task', 2, 'QUEUED', 'RUNNING', 'job 108 running on node1', 'system', '2026-11-30 11:31:23.017508+00');
INSERT INTO public.state_changes VALUES (28, 'task', 3, 'QUEUED', 'RUNNING', 'job 109 running on node1', 'system', '2026-11-30 11:31:23.017508+00');
INSERT INTO public.state_changes VALUES (29, 'task', 4, 'QUEUED', 'RUNNING', 'job 110 running on node1', 'system', '2026-11-30 11:31:23.017509+00');
INSERT INTO public.state_changes VALUES (30, 'trial', 6, 'RUNNING', 'ERROR', 'job 106 ended FAILED (exit code 1): failed; max_restarts (0) reached', 'system', '2026-11-30 11:31:23.028117+00');
INSERT INTO public.state_changes VALUES (31, 'trial', 5, 'STOPPING_KILLED', 'CANCELED', 'job 105 ended CANCELLED (exit code 1)', 'system', '2026-11-30 11:31:23.02812+00');
INSERT INTO public.state_changes VALUES (32, 'trial', 4, 'RUNNING', 'COMPLETED', 'job 104 ended COMPLETED (exit code 0)', 'system', '2026-11-30 11:31:23.028121+00');
INSERT INTO public.state_changes VALUES (33, 'experiment', 6, 'ACTIVE', 'STOPPING_ERROR', 'no trial completed', 'system', '2026-11-30 11:31:23.046865+00');
INSERT INTO public.state_changes VALUES (34, 'experiment', 6, 'STOPPING_ERROR', 'ERROR', 'all trials ended', 'system', '2026-11-30 11:31:23.046869+00');
INSERT INTO public.state_changes VALUES (35, 'experiment', 4, 'ACTIVE', 'STOPPING_COMPLETED', 'the searcher has finished', 'system', '2026-11-30 11:31:23.049297+00');
INSERT INTO public.state_changes VALUES (36, 'experiment', 4, 'STOPPING_COMPLETED', 'COMPLETED', 'all trials ended', 'system', '2026-11-30 11:31:23.0493+00');
INSERT INTO public.state_changes VALUES (37, 'experiment', 5, 'STOPPING_KILLED', 'CANCELED', 'all trials ended', 'system', '2026-11-30 11:31:23.059812+00');
INSERT INTO public.state_changes VALUES (38, 'task', 4, 'RUNNING', 'STOPPING_KILLED', 'kill requested', 'bob', '2026-11-30 11:31:23.080868+00');
INSERT INTO public.state_changes VALUES (39, 'task', 2, 'RUNNING', 'COMPLETED', 'job 108 ended COMPLETED, exit code 0', 'system', '2026-11-30 11:31:23.118146+00');
INSERT INTO public.state_changes VALUES (40, 'task', 3, 'RUNNING', 'ERROR', 'job 109 ended FAILED, exit code 1', 'system', '2026-11-30 11:31:23.11815+00');
INSERT INTO public.state_changes VALUES (41, 'task', 4, 'STOPPING_KILLED', 'CANCELED', 'job 110 ended CANCELLED, exit code 1', 'system', '2026-11-30 11:31:23.11815+00');


--
-- Data for Name: templates; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: trial_logs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.trial_logs VALUES (1, 1, NULL, NULL, 'master', 'job 101 is pending: Resources', '2026-11-30 11:31:22.575864+00', NULL);
INSERT INTO public.trial_logs VALUES (2, 2, NULL, NULL, 'master', 'job 102 is pending: Resources', '2026-11-30 11:31:22.57587+00', NULL);
INSERT INTO public.trial_logs VALUES (3, 3, NULL, NULL, 'master', 'job 103 is pending: Resources', '2026-11-30 11:31:22.575871+00', NULL);
INSERT INTO public.trial_logs VALUES (4, 4, NULL, NULL, 'master', 'job 104 is pending: Resources', '2026-11-30 11:31:22.575872+00', NULL);
INSERT INTO public.trial_logs VALUES (5, 5, NULL, NULL, 'master', 'job 105 is pending: Resources', '2026-11-30 11:31:22.575872+00', NULL);
INSERT INTO public.trial_logs VALUES (6, 6, NULL, NULL, 'master', 'job 106 is pending: Resources', '2026-11-30 11:31:22.575873+00', NULL);
INSERT INTO public.trial_logs VALUES (7, 1, '101', NULL, 'stdout', 'training running', '2026-11-30 11:31:22.710843+00', 'node1');
INSERT INTO public.trial_logs VALUES (8, 1, '101', NULL, 'stdout', 'step 5', '2026-11-30 11:31:22.710851+00', 'node1');
INSERT INTO public.trial_logs VALUES (9, 4, '104', NULL, 'stdout', 'training completed', '2026-11-30 11:31:22.715343+00', 'node1');
INSERT INTO public.trial_logs VALUES (10, 4, '104', NULL, 'stdout', 'step 5', '2026-11-30 11:31:22.715349+00', 'node1');
INSERT INTO public.trial_logs VALUES (11, 5, '105', NULL, 'stdout', 'training canceled', '2026-11-30 11:31:22.718682+00', 'node1');
INSERT INTO public.trial_logs VALUES (12, 5, '105', NULL, 'stdout', 'step 5', '2026-11-30 11:31:22.718688+00', 'node1');
INSERT INTO public.trial_logs VALUES (13, 6, '106', NULL, 'stdout', 'training error', '2026-11-30 11:31:22.72361+00', 'node1');
INSERT INTO public.trial_logs VALUES (14, 6, '106', NULL, 'stdout', 'step 5', '2026-11-30 11:31:22.723617+00', 'node1');
INSERT INTO public.trial_logs VALUES (15, 3, NULL, NULL, 'master', 'job 103 ended CANCELLED (exit code 1); the trial stays paused', '2026-11-30 11:31:22.734757+00', NULL);


--
-- Data for Name: trials; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.trials VALUES (1, 1, 'RUNNING', '{"lr": 0.1}', 513456766, 0, 1, 5, '759a5090dec14be7f95fb21a9d7c9288981c5e8b7bdbd99e5e53e8f3ab867ed2', '@JOB_ROOT@/exp-1/trial-1', '00000000-0000-0000-0000-000000000001', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '2026-11-30 11:31:22.296768+00', NULL, 'fc72a620-db46-4f17-b6ba-7922b2682893', NULL, false, NULL, NULL, 0, false, '[]');
INSERT INTO public.trials VALUES (5, 5, 'CANCELED', '{"lr": 0.1}', 281342176, 0, 1, 5, 'ef648e19037b438cba7b9af219d2990246e0d80977d8b17ef922a5604404e3c5', '@JOB_ROOT@/exp-5/trial-5', '00000000-0000-0000-0000-000000000005', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '2026-11-30 11:31:22.3198+00', '2026-11-30 11:31:23.025616+00', 'd5837822-5517-46e8-9a85-ab2a4f3717ff', NULL, false, '2026-11-30 11:31:22.907954+00', NULL, 0, false, '[]');
INSERT INTO public.trials VALUES (2, 2, 'QUEUED', '{"lr": 0.1}', 2005604983, 0, 1, 0, '26b895469ef3cf2d7c091a3875060a1c6a14290580ee60ebc1f59bff9a0210b6', '@JOB_ROOT@/exp-2/trial-2', NULL, NULL, NULL, '2026-11-30 11:31:22.308491+00', NULL, 'bfd167be-dd68-4d7e-b701-6c0e9f9bce21', NULL, false, NULL, NULL, 0, false, '[]');
INSERT INTO public.trials VALUES (6, 6, 'ERROR', '{"lr": 0.1}', 424209985, 0, 1, 5, 'ffa515533c8ad1704091e5e2b8d88f65e2851aafc87b48349606598277e66ce4', '@JOB_ROOT@/exp-6/trial-6', '00000000-0000-0000-0000-000000000006', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '2026-11-30 11:31:22.327494+00', '2026-11-30 11:31:23.025312+00', 'f8d8c63d-56e3-43c6-8eca-a6fed624b433', NULL, true, NULL, NULL, 0, false, '[]');
INSERT INTO public.trials VALUES (4, 4, 'COMPLETED', '{"lr": 0.1}', 1790285852, 0, 1, 10, '13c62ffda0e74107fa0415e940bd324ec59a479d368bc09f7a58342d6810b5a4', '@JOB_ROOT@/exp-4/trial-4', '00000000-0000-0000-0000-000000000004', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 10}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 10}', '2026-11-30 11:31:22.316122+00', '2026-11-30 11:31:23.025973+00', 'bc8147c5-6ff8-4078-b9fd-2639bb7f0f6d', NULL, true, NULL, NULL, 0, false, '[]');
INSERT INTO public.trials VALUES (3, 3, 'PAUSED', '{"lr": 0.1}', 654074841, 0, 1, 0, '4cedacb39df5f5ea734c9d0acbbc988fbef6425f6ae9fdbab9ba0fac47176423', '@JOB_ROOT@/exp-3/trial-3', NULL, NULL, NULL, '2026-11-30 11:31:22.312532+00', NULL, 'b6cab63a-ce43-4b07-bb58-bb13e0b959ae', NULL, false, '2026-11-30 11:31:22.676593+00', NULL, 0, false, '[]');


--
-- Data for Name: users; Type: TABLE DATA; Schema: public; Owner: -
--



--
-- Data for Name: workspace_members; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.workspace_members VALUES (1, 'alice', 'admin', '2026-11-30 11:31:21.983651+00');
INSERT INTO public.workspace_members VALUES (1, 'bob', 'editor', '2026-11-30 11:31:22.000928+00');


--
-- Data for Name: workspaces; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.workspaces VALUES (1, 'research', 'alice', '2026-11-30 11:31:21.978474+00');


--
-- Name: allocation_steps_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.allocation_steps_id_seq', 1, false);


--
-- Name: allocations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.allocations_id_seq', 1, false);


--
-- Name: auth_tokens_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.auth_tokens_id_seq', 1, true);


--
-- Name: command_tasks_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.command_tasks_id_seq', 5, true);


--
-- Name: experiments_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.experiments_id_seq', 6, true);


--
-- Name: jobs_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.jobs_id_seq', 6, true);


--
-- Name: metrics_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.metrics_id_seq', 29, true);


--
-- Name: model_versions_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.model_versions_id_seq', 1, true);


--
-- Name: models_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.models_id_seq', 1, true);


--
-- Name: projects_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.projects_id_seq', 1, true);


--
-- Name: searcher_events_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.searcher_events_id_seq', 4, true);


--
-- Name: searcher_journal_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.searcher_journal_id_seq', 3, true);


--
-- Name: state_changes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.state_changes_id_seq', 41, true);


--
-- Name: trial_logs_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.trial_logs_id_seq', 15, true);


--
-- Name: trials_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.trials_id_seq', 6, true);


--
-- Name: workspaces_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.workspaces_id_seq', 1, true);


--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);


--
-- Name: allocation_steps pk_allocation_steps; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocation_steps
    ADD CONSTRAINT pk_allocation_steps PRIMARY KEY (id);


--
-- Name: allocations pk_allocations; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocations
    ADD CONSTRAINT pk_allocations PRIMARY KEY (id);


--
-- Name: auth_tokens pk_auth_tokens; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT pk_auth_tokens PRIMARY KEY (id);


--
-- Name: checkpoints pk_checkpoints; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT pk_checkpoints PRIMARY KEY (uuid);


--
-- Name: cluster_snapshots pk_cluster_snapshots; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.cluster_snapshots
    ADD CONSTRAINT pk_cluster_snapshots PRIMARY KEY (kind);


--
-- Name: command_tasks pk_command_tasks; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.command_tasks
    ADD CONSTRAINT pk_command_tasks PRIMARY KEY (id);


--
-- Name: experiments pk_experiments; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.experiments
    ADD CONSTRAINT pk_experiments PRIMARY KEY (id);


--
-- Name: jobs pk_jobs; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT pk_jobs PRIMARY KEY (id);


--
-- Name: metrics pk_metrics; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metrics
    ADD CONSTRAINT pk_metrics PRIMARY KEY (id);


--
-- Name: model_versions pk_model_versions; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.model_versions
    ADD CONSTRAINT pk_model_versions PRIMARY KEY (id);


--
-- Name: models pk_models; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.models
    ADD CONSTRAINT pk_models PRIMARY KEY (id);


--
-- Name: projects pk_projects; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT pk_projects PRIMARY KEY (id);


--
-- Name: report_streams pk_report_streams; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.report_streams
    ADD CONSTRAINT pk_report_streams PRIMARY KEY (trial_id, run_id, requeue, rank);


--
-- Name: searcher_events pk_searcher_events; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_events
    ADD CONSTRAINT pk_searcher_events PRIMARY KEY (id);


--
-- Name: searcher_journal pk_searcher_journal; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_journal
    ADD CONSTRAINT pk_searcher_journal PRIMARY KEY (id);


--
-- Name: shell_keys pk_shell_keys; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shell_keys
    ADD CONSTRAINT pk_shell_keys PRIMARY KEY (task_id);


--
-- Name: state_changes pk_state_changes; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.state_changes
    ADD CONSTRAINT pk_state_changes PRIMARY KEY (id);


--
-- Name: templates pk_templates; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT pk_templates PRIMARY KEY (name);


--
-- Name: trial_logs pk_trial_logs; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trial_logs
    ADD CONSTRAINT pk_trial_logs PRIMARY KEY (id);


--
-- Name: trials pk_trials; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trials
    ADD CONSTRAINT pk_trials PRIMARY KEY (id);


--
-- Name: users pk_users; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT pk_users PRIMARY KEY (name);


--
-- Name: workspace_members pk_workspace_members; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspace_members
    ADD CONSTRAINT pk_workspace_members PRIMARY KEY (workspace_id, "user");


--
-- Name: workspaces pk_workspaces; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspaces
    ADD CONSTRAINT pk_workspaces PRIMARY KEY (id);


--
-- Name: auth_tokens uq_auth_tokens_token_hash; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.auth_tokens
    ADD CONSTRAINT uq_auth_tokens_token_hash UNIQUE (token_hash);


--
-- Name: model_versions uq_model_versions_model_id_version; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.model_versions
    ADD CONSTRAINT uq_model_versions_model_id_version UNIQUE (model_id, version);


--
-- Name: models uq_models_name; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.models
    ADD CONSTRAINT uq_models_name UNIQUE (name);


--
-- Name: projects uq_projects_workspace_id_name; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT uq_projects_workspace_id_name UNIQUE (workspace_id, name);


--
-- Name: workspaces uq_workspaces_name; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspaces
    ADD CONSTRAINT uq_workspaces_name UNIQUE (name);


--
-- Name: ix_allocation_steps_allocation_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_allocation_steps_allocation_id ON public.allocation_steps USING btree (allocation_id);


--
-- Name: ix_allocation_steps_phase; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_allocation_steps_phase ON public.allocation_steps USING btree (phase);


--
-- Name: ix_allocation_steps_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_allocation_steps_trial_id ON public.allocation_steps USING btree (trial_id);


--
-- Name: ix_allocations_experiment_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_allocations_experiment_id ON public.allocations USING btree (experiment_id);


--
-- Name: ix_allocations_job_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_allocations_job_id ON public.allocations USING btree (job_id);


--
-- Name: ix_allocations_phase; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_allocations_phase ON public.allocations USING btree (phase);


--
-- Name: ix_auth_tokens_username; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_auth_tokens_username ON public.auth_tokens USING btree (username);


--
-- Name: ix_checkpoints_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_checkpoints_trial_id ON public.checkpoints USING btree (trial_id);


--
-- Name: ix_command_tasks_job_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_command_tasks_job_id ON public.command_tasks USING btree (job_id);


--
-- Name: ix_command_tasks_kind; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_command_tasks_kind ON public.command_tasks USING btree (kind);


--
-- Name: ix_command_tasks_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_command_tasks_owner ON public.command_tasks USING btree (owner);


--
-- Name: ix_command_tasks_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_command_tasks_state ON public.command_tasks USING btree (state);


--
-- Name: ix_command_tasks_workspace_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_command_tasks_workspace_id ON public.command_tasks USING btree (workspace_id);


--
-- Name: ix_experiments_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_owner ON public.experiments USING btree (owner);


--
-- Name: ix_experiments_project_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_project_id ON public.experiments USING btree (project_id);


--
-- Name: ix_experiments_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_state ON public.experiments USING btree (state);


--
-- Name: ix_experiments_workspace_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_workspace_id ON public.experiments USING btree (workspace_id);


--
-- Name: ix_jobs_active; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_jobs_active ON public.jobs USING btree (active);


--
-- Name: ix_jobs_job_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_jobs_job_id ON public.jobs USING btree (job_id);


--
-- Name: ix_jobs_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_jobs_trial_id ON public.jobs USING btree (trial_id);


--
-- Name: ix_metrics_trial_group_name_step; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_metrics_trial_group_name_step ON public.metrics USING btree (trial_id, "group", name, archived, steps_completed, value);


--
-- Name: ix_metrics_trial_group_step; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_metrics_trial_group_step ON public.metrics USING btree (trial_id, "group", steps_completed);


--
-- Name: ix_model_versions_checkpoint_uuid; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_model_versions_checkpoint_uuid ON public.model_versions USING btree (checkpoint_uuid);


--
-- Name: ix_model_versions_model_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_model_versions_model_id ON public.model_versions USING btree (model_id);


--
-- Name: ix_models_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_models_owner ON public.models USING btree (owner);


--
-- Name: ix_models_workspace_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_models_workspace_id ON public.models USING btree (workspace_id);


--
-- Name: ix_projects_workspace_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_projects_workspace_id ON public.projects USING btree (workspace_id);


--
-- Name: ix_searcher_events_experiment_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_searcher_events_experiment_id ON public.searcher_events USING btree (experiment_id);


--
-- Name: ix_searcher_events_processed_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_searcher_events_processed_id ON public.searcher_events USING btree (processed, id);


--
-- Name: ix_searcher_journal_experiment_id_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_searcher_journal_experiment_id_seq ON public.searcher_journal USING btree (experiment_id, seq);


--
-- Name: ix_state_changes_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_state_changes_entity ON public.state_changes USING btree (entity_kind, entity_id);


--
-- Name: ix_templates_workspace_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_templates_workspace_id ON public.templates USING btree (workspace_id);


--
-- Name: ix_trial_logs_trial_id_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trial_logs_trial_id_id ON public.trial_logs USING btree (trial_id, id);


--
-- Name: ix_trials_experiment_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_experiment_id ON public.trials USING btree (experiment_id);


--
-- Name: ix_trials_request_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_request_id ON public.trials USING btree (request_id);


--
-- Name: ix_trials_searcher_closed_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_searcher_closed_state ON public.trials USING btree (searcher_closed, state);


--
-- Name: ix_trials_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_state ON public.trials USING btree (state);


--
-- Name: ix_workspace_members_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_workspace_members_user ON public.workspace_members USING btree ("user");


--
-- Name: allocation_steps fk_allocation_steps_allocation_id_allocations; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocation_steps
    ADD CONSTRAINT fk_allocation_steps_allocation_id_allocations FOREIGN KEY (allocation_id) REFERENCES public.allocations(id) ON DELETE CASCADE;


--
-- Name: allocation_steps fk_allocation_steps_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocation_steps
    ADD CONSTRAINT fk_allocation_steps_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: allocations fk_allocations_experiment_id_experiments; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.allocations
    ADD CONSTRAINT fk_allocations_experiment_id_experiments FOREIGN KEY (experiment_id) REFERENCES public.experiments(id) ON DELETE CASCADE;


--
-- Name: checkpoints fk_checkpoints_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT fk_checkpoints_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: command_tasks fk_command_tasks_workspace_id_workspaces; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.command_tasks
    ADD CONSTRAINT fk_command_tasks_workspace_id_workspaces FOREIGN KEY (workspace_id) REFERENCES public.workspaces(id) ON DELETE RESTRICT;


--
-- Name: experiments fk_experiments_project_id_projects; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.experiments
    ADD CONSTRAINT fk_experiments_project_id_projects FOREIGN KEY (project_id) REFERENCES public.projects(id) ON DELETE RESTRICT;


--
-- Name: experiments fk_experiments_workspace_id_workspaces; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.experiments
    ADD CONSTRAINT fk_experiments_workspace_id_workspaces FOREIGN KEY (workspace_id) REFERENCES public.workspaces(id) ON DELETE RESTRICT;


--
-- Name: jobs fk_jobs_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT fk_jobs_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: metrics fk_metrics_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.metrics
    ADD CONSTRAINT fk_metrics_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: model_versions fk_model_versions_checkpoint_uuid_checkpoints; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.model_versions
    ADD CONSTRAINT fk_model_versions_checkpoint_uuid_checkpoints FOREIGN KEY (checkpoint_uuid) REFERENCES public.checkpoints(uuid) ON DELETE RESTRICT;


--
-- Name: model_versions fk_model_versions_model_id_models; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.model_versions
    ADD CONSTRAINT fk_model_versions_model_id_models FOREIGN KEY (model_id) REFERENCES public.models(id) ON DELETE CASCADE;


--
-- Name: models fk_models_workspace_id_workspaces; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.models
    ADD CONSTRAINT fk_models_workspace_id_workspaces FOREIGN KEY (workspace_id) REFERENCES public.workspaces(id) ON DELETE RESTRICT;


--
-- Name: projects fk_projects_workspace_id_workspaces; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.projects
    ADD CONSTRAINT fk_projects_workspace_id_workspaces FOREIGN KEY (workspace_id) REFERENCES public.workspaces(id) ON DELETE CASCADE;


--
-- Name: report_streams fk_report_streams_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.report_streams
    ADD CONSTRAINT fk_report_streams_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: searcher_events fk_searcher_events_experiment_id_experiments; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_events
    ADD CONSTRAINT fk_searcher_events_experiment_id_experiments FOREIGN KEY (experiment_id) REFERENCES public.experiments(id) ON DELETE CASCADE;


--
-- Name: searcher_events fk_searcher_events_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_events
    ADD CONSTRAINT fk_searcher_events_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: searcher_journal fk_searcher_journal_experiment_id_experiments; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.searcher_journal
    ADD CONSTRAINT fk_searcher_journal_experiment_id_experiments FOREIGN KEY (experiment_id) REFERENCES public.experiments(id) ON DELETE CASCADE;


--
-- Name: shell_keys fk_shell_keys_task_id_command_tasks; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.shell_keys
    ADD CONSTRAINT fk_shell_keys_task_id_command_tasks FOREIGN KEY (task_id) REFERENCES public.command_tasks(id) ON DELETE CASCADE;


--
-- Name: templates fk_templates_workspace_id_workspaces; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT fk_templates_workspace_id_workspaces FOREIGN KEY (workspace_id) REFERENCES public.workspaces(id) ON DELETE RESTRICT;


--
-- Name: trial_logs fk_trial_logs_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trial_logs
    ADD CONSTRAINT fk_trial_logs_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


--
-- Name: trials fk_trials_experiment_id_experiments; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.trials
    ADD CONSTRAINT fk_trials_experiment_id_experiments FOREIGN KEY (experiment_id) REFERENCES public.experiments(id) ON DELETE CASCADE;


--
-- Name: workspace_members fk_workspace_members_workspace_id_workspaces; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspace_members
    ADD CONSTRAINT fk_workspace_members_workspace_id_workspaces FOREIGN KEY (workspace_id) REFERENCES public.workspaces(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--


