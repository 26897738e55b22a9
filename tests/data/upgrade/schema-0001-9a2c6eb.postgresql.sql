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
    ended_at timestamp with time zone
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
    ended_at timestamp with time zone
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
    reported_at timestamp with time zone NOT NULL
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
-- Name: trial_logs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.trial_logs (
    id bigint NOT NULL,
    trial_id integer NOT NULL,
    job_id character varying(64),
    rank integer,
    stream character varying(8) NOT NULL,
    line text NOT NULL,
    at timestamp with time zone NOT NULL
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
    ended_at timestamp with time zone
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
-- Data for Name: alembic_version; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.alembic_version VALUES ('0001');


--
-- Data for Name: checkpoints; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000005', 5, 5, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 10:48:41.670531+00');
INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000004', 4, 10, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 10:48:41.722749+00');
INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000006', 6, 5, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 10:48:41.768319+00');
INSERT INTO public.checkpoints VALUES ('00000000-0000-0000-0000-000000000001', 1, 5, '{"framework": "fixture"}', '{"state.pt": 1234}', '{"validation_loss": 0.5}', 'ACTIVE', '2026-11-30 10:48:41.817916+00');


--
-- Data for Name: experiments; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.experiments VALUES (1, 'running', '', '[]', 'alice', 'ACTIVE', '{"name": "running", "labels": [], "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "entrypoint": "python3 train.py", "description": "", "max_restarts": 0, "hyperparameters": {"lr": 0.1}, "reproducibility": {"experiment_seed": 749530984}, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}}', 'name: running
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b080088540d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 10:48:40.834725+00', NULL);
INSERT INTO public.experiments VALUES (2, 'queued', '', '[]', 'alice', 'ACTIVE', '{"name": "queued", "labels": [], "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "entrypoint": "python3 train.py", "description": "", "max_restarts": 0, "hyperparameters": {"lr": 0.1}, "reproducibility": {"experiment_seed": 1878659979}, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}}', 'name: queued
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b080088540d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 10:48:40.865874+00', NULL);
INSERT INTO public.experiments VALUES (3, 'paused', '', '[]', 'alice', 'PAUSED', '{"name": "paused", "labels": [], "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "entrypoint": "python3 train.py", "description": "", "max_restarts": 0, "hyperparameters": {"lr": 0.1}, "reproducibility": {"experiment_seed": 562832285}, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}}', 'name: paused
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b080088540d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 10:48:40.9016+00', NULL);
INSERT INTO public.experiments VALUES (4, 'completed', '', '[]', 'alice', 'COMPLETED', '{"name": "completed", "labels": [], "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "entrypoint": "python3 train.py", "description": "", "max_restarts": 0, "hyperparameters": {"lr": 0.1}, "reproducibility": {"experiment_seed": 62147089}, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}}', 'name: completed
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b080088540d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 10:48:40.926831+00', '2026-11-30 10:48:41.875449+00');
INSERT INTO public.experiments VALUES (6, 'error', '', '[]', 'alice', 'ERROR', '{"name": "error", "labels": [], "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "entrypoint": "python3 train.py", "description": "", "max_restarts": 0, "hyperparameters": {"lr": 0.1}, "reproducibility": {"experiment_seed": 833281097}, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}}', 'name: error
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b080088540d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 10:48:40.967394+00', '2026-11-30 10:48:41.886009+00');
INSERT INTO public.experiments VALUES (5, 'canceled', '', '[]', 'alice', 'CANCELED', '{"name": "canceled", "labels": [], "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "entrypoint": "python3 train.py", "description": "", "max_restarts": 0, "hyperparameters": {"lr": 0.1}, "reproducibility": {"experiment_seed": 928194657}, "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}}', 'name: canceled
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
', '\x1f8b080088540d6b02ffedcd310ac2401404d05f7b0abb6823ab2ce63ce9dc2684752dbcbd4b1ac15e41f25e33c334d3ea54e6d3f28c2f4add35e735bbcf4ce99cdf7dddc77c19639fe2071ef736d57e19dbb4d432b7c3702bc37117000000000000000000fc8d172b91142b00280000', 'single', NULL, false, '2026-11-30 10:48:40.949694+00', '2026-11-30 10:48:41.887751+00');


--
-- Data for Name: jobs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.jobs VALUES (2, 2, 1, '1002', true, false, 'PENDING', 'PENDING', NULL, 0, 'node1', '@JOB_ROOT@/exp-2/trial-2/job-1.sh', '{"err": 0, "out": 0}', '2026-11-30 10:48:41.159688+00', NULL);
INSERT INTO public.jobs VALUES (3, 3, 1, '1003', false, false, 'CANCELLED', 'PENDING', NULL, 0, 'node1', '@JOB_ROOT@/exp-3/trial-3/job-1.sh', '{"err": 0, "out": 0}', '2026-11-30 10:48:41.192653+00', NULL);
INSERT INTO public.jobs VALUES (1, 1, 1, '1001', true, false, 'RUNNING', 'RUNNING', NULL, 0, 'node1', '@JOB_ROOT@/exp-1/trial-1/job-1.sh', '{"err": 0, "out": 24}', '2026-11-30 10:48:41.127122+00', NULL);
INSERT INTO public.jobs VALUES (4, 4, 1, '1004', false, false, 'COMPLETED', 'COMPLETED', NULL, 0, 'node1', '@JOB_ROOT@/exp-4/trial-4/job-1.sh', '{"err": 0, "out": 26}', '2026-11-30 10:48:41.239143+00', '2026-11-30 10:48:41.863859+00');
INSERT INTO public.jobs VALUES (5, 5, 1, '1005', false, true, 'CANCELLED', 'CANCELLED', NULL, 0, 'node1', '@JOB_ROOT@/exp-5/trial-5/job-1.sh', '{"err": 0, "out": 25}', '2026-11-30 10:48:41.265033+00', '2026-11-30 10:48:41.863745+00');
INSERT INTO public.jobs VALUES (6, 6, 1, '1006', false, false, 'FAILED', 'FAILED', NULL, 1, 'node1', '@JOB_ROOT@/exp-6/trial-6/job-1.sh', '{"err": 0, "out": 22}', '2026-11-30 10:48:41.299419+00', '2026-11-30 10:48:41.86354+00');


--
-- Data for Name: metrics; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.metrics VALUES (1, 5, 'training', 1, 'loss', 1, '2026-11-30 10:48:41.621433+00');
INSERT INTO public.metrics VALUES (2, 5, 'training', 2, 'loss', 0.5, '2026-11-30 10:48:41.621433+00');
INSERT INTO public.metrics VALUES (3, 5, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 10:48:41.621433+00');
INSERT INTO public.metrics VALUES (4, 5, 'training', 4, 'loss', 0.25, '2026-11-30 10:48:41.621433+00');
INSERT INTO public.metrics VALUES (5, 5, 'training', 5, 'loss', 0.2, '2026-11-30 10:48:41.621433+00');
INSERT INTO public.metrics VALUES (6, 5, 'validation', 5, 'validation_loss', 0.5, '2026-11-30 10:48:41.643043+00');
INSERT INTO public.metrics VALUES (7, 4, 'training', 1, 'loss', 1, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (8, 4, 'training', 2, 'loss', 0.5, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (9, 4, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (10, 4, 'training', 4, 'loss', 0.25, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (11, 4, 'training', 5, 'loss', 0.2, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (12, 4, 'training', 6, 'loss', 0.16666666666666666, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (13, 4, 'training', 7, 'loss', 0.14285714285714285, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (14, 4, 'training', 8, 'loss', 0.125, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (15, 4, 'training', 9, 'loss', 0.1111111111111111, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (16, 4, 'training', 10, 'loss', 0.1, '2026-11-30 10:48:41.690891+00');
INSERT INTO public.metrics VALUES (17, 4, 'validation', 10, 'validation_loss', 0.5, '2026-11-30 10:48:41.699835+00');
INSERT INTO public.metrics VALUES (18, 6, 'training', 1, 'loss', 1, '2026-11-30 10:48:41.74822+00');
INSERT INTO public.metrics VALUES (19, 6, 'training', 2, 'loss', 0.5, '2026-11-30 10:48:41.74822+00');
INSERT INTO public.metrics VALUES (20, 6, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 10:48:41.74822+00');
INSERT INTO public.metrics VALUES (21, 6, 'training', 4, 'loss', 0.25, '2026-11-30 10:48:41.74822+00');
INSERT INTO public.metrics VALUES (22, 6, 'training', 5, 'loss', 0.2, '2026-11-30 10:48:41.74822+00');
INSERT INTO public.metrics VALUES (23, 6, 'validation', 5, 'validation_loss', 0.5, '2026-11-30 10:48:41.756595+00');
INSERT INTO public.metrics VALUES (24, 1, 'training', 1, 'loss', 1, '2026-11-30 10:48:41.781703+00');
INSERT INTO public.metrics VALUES (25, 1, 'training', 2, 'loss', 0.5, '2026-11-30 10:48:41.781703+00');
INSERT INTO public.metrics VALUES (26, 1, 'training', 3, 'loss', 0.3333333333333333, '2026-11-30 10:48:41.781703+00');
INSERT INTO public.metrics VALUES (27, 1, 'training', 4, 'loss', 0.25, '2026-11-30 10:48:41.781703+00');
INSERT INTO public.metrics VALUES (28, 1, 'training', 5, 'loss', 0.2, '2026-11-30 10:48:41.781703+00');
INSERT INTO public.metrics VALUES (29, 1, 'validation', 5, 'validation_loss', 0.5, '2026-11-30 10:48:41.791837+00');


--
-- Data for Name: state_changes; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.state_changes VALUES (1, 'experiment', 1, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 10:48:40.843724+00');
INSERT INTO public.state_changes VALUES (2, 'experiment', 2, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 10:48:40.866958+00');
INSERT INTO public.state_changes VALUES (3, 'experiment', 3, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 10:48:40.902658+00');
INSERT INTO public.state_changes VALUES (4, 'experiment', 4, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 10:48:40.928868+00');
INSERT INTO public.state_changes VALUES (5, 'experiment', 5, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 10:48:40.950541+00');
INSERT INTO public.state_changes VALUES (6, 'experiment', 6, NULL, 'ACTIVE', 'experiment created', 'alice', '2026-11-30 10:48:40.96875+00');
INSERT INTO public.state_changes VALUES (7, 'trial', 1, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 10:48:41.026747+00');
INSERT INTO public.state_changes VALUES (8, 'trial', 2, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 10:48:41.033959+00');
INSERT INTO public.state_changes VALUES (9, 'trial', 3, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 10:48:41.044109+00');
INSERT INTO public.state_changes VALUES (10, 'trial', 4, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 10:48:41.054343+00');
INSERT INTO public.state_changes VALUES (11, 'trial', 5, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 10:48:41.057938+00');
INSERT INTO public.state_changes VALUES (12, 'trial', 6, NULL, 'QUEUED', 'created by the single searcher', 'system', '2026-11-30 10:48:41.07782+00');
INSERT INTO public.state_changes VALUES (13, 'trial', 3, 'QUEUED', 'PAUSED', 'paused by alice', 'alice', '2026-11-30 10:48:41.53824+00');
INSERT INTO public.state_changes VALUES (14, 'experiment', 3, 'ACTIVE', 'PAUSED', 'paused by alice', 'alice', '2026-11-30 10:48:41.538245+00');
INSERT INTO public.state_changes VALUES (15, 'trial', 1, 'QUEUED', 'RUNNING', 'Slurm job 1001 running on node1', 'system', '2026-11-30 10:48:41.580402+00');
INSERT INTO public.state_changes VALUES (16, 'trial', 4, 'QUEUED', 'RUNNING', 'Slurm job 1004 running on node1', 'system', '2026-11-30 10:48:41.591037+00');
INSERT INTO public.state_changes VALUES (17, 'trial', 5, 'QUEUED', 'RUNNING', 'Slurm job 1005 running on node1', 'system', '2026-11-30 10:48:41.594214+00');
INSERT INTO public.state_changes VALUES (18, 'trial', 6, 'QUEUED', 'RUNNING', 'Slurm job 1006 running on node1', 'system', '2026-11-30 10:48:41.595528+00');
INSERT INTO public.state_changes VALUES (19, 'experiment', 5, 'ACTIVE', 'STOPPING_KILLED', 'kill requested', 'alice', '2026-11-30 10:48:41.823586+00');
INSERT INTO public.state_changes VALUES (20, 'trial', 5, 'RUNNING', 'STOPPING_KILLED', 'experiment killed', 'alice', '2026-11-30 10:48:41.824616+00');
INSERT INTO public.state_changes VALUES (21, 'trial', 6, 'RUNNING', 'ERROR', 'Slurm job 1006 ended FAILED (exit code 1)', 'system', '2026-11-30 10:48:41.86595+00');
INSERT INTO public.state_changes VALUES (22, 'trial', 5, 'STOPPING_KILLED', 'CANCELED', 'Slurm job 1005 ended CANCELLED (exit code 0)', 'system', '2026-11-30 10:48:41.865953+00');
INSERT INTO public.state_changes VALUES (23, 'trial', 4, 'RUNNING', 'COMPLETED', 'Slurm job 1004 ended COMPLETED (exit code 0)', 'system', '2026-11-30 10:48:41.865954+00');
INSERT INTO public.state_changes VALUES (24, 'experiment', 4, 'ACTIVE', 'STOPPING_COMPLETED', 'all trials ended', 'system', '2026-11-30 10:48:41.881315+00');
INSERT INTO public.state_changes VALUES (25, 'experiment', 4, 'STOPPING_COMPLETED', 'COMPLETED', 'all trials ended', 'system', '2026-11-30 10:48:41.881319+00');
INSERT INTO public.state_changes VALUES (26, 'experiment', 6, 'ACTIVE', 'STOPPING_ERROR', 'no trial completed', 'system', '2026-11-30 10:48:41.886693+00');
INSERT INTO public.state_changes VALUES (27, 'experiment', 6, 'STOPPING_ERROR', 'ERROR', 'all trials ended', 'system', '2026-11-30 10:48:41.886696+00');
INSERT INTO public.state_changes VALUES (28, 'experiment', 5, 'STOPPING_KILLED', 'CANCELED', 'all trials ended', 'system', '2026-11-30 10:48:41.888507+00');


--
-- Data for Name: trial_logs; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.trial_logs VALUES (1, 1, '1001', NULL, 'stdout', 'training running', '2026-11-30 10:48:41.571715+00');
INSERT INTO public.trial_logs VALUES (2, 1, '1001', NULL, 'stdout', 'step 5', '2026-11-30 10:48:41.571723+00');
INSERT INTO public.trial_logs VALUES (3, 4, '1004', NULL, 'stdout', 'training completed', '2026-11-30 10:48:41.579471+00');
INSERT INTO public.trial_logs VALUES (4, 4, '1004', NULL, 'stdout', 'step 5', '2026-11-30 10:48:41.579477+00');
INSERT INTO public.trial_logs VALUES (5, 5, '1005', NULL, 'stdout', 'training canceled', '2026-11-30 10:48:41.59037+00');
INSERT INTO public.trial_logs VALUES (6, 5, '1005', NULL, 'stdout', 'step 5', '2026-11-30 10:48:41.590376+00');
INSERT INTO public.trial_logs VALUES (7, 6, '1006', NULL, 'stdout', 'training error', '2026-11-30 10:48:41.593534+00');
INSERT INTO public.trial_logs VALUES (8, 6, '1006', NULL, 'stdout', 'step 5', '2026-11-30 10:48:41.593541+00');


--
-- Data for Name: trials; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.trials VALUES (1, 1, 'RUNNING', '{"lr": 0.1}', 69026394, 0, 1, 5, 'a4xvjZ8LJwRh_W1wTy7UvIHOZNFLFRknsdoTanugnV4', '@JOB_ROOT@/exp-1/trial-1', '00000000-0000-0000-0000-000000000001', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '2026-11-30 10:48:41.021813+00', NULL);
INSERT INTO public.trials VALUES (2, 2, 'QUEUED', '{"lr": 0.1}', 1328313459, 0, 1, 0, 'qLMKkJtM94fSCBN6Avp4VLbxm8Q-nabDF1z5wl4Ck4Q', '@JOB_ROOT@/exp-2/trial-2', NULL, NULL, NULL, '2026-11-30 10:48:41.029349+00', NULL);
INSERT INTO public.trials VALUES (4, 4, 'COMPLETED', '{"lr": 0.1}', 812399031, 0, 1, 10, 'h0e52buD023WPs3_KfFv6T5Er7kl7dLcBaCs7fGOfhU', '@JOB_ROOT@/exp-4/trial-4', '00000000-0000-0000-0000-000000000004', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 10}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 10}', '2026-11-30 10:48:41.053364+00', '2026-11-30 10:48:41.863869+00');
INSERT INTO public.trials VALUES (5, 5, 'CANCELED', '{"lr": 0.1}', 882853674, 0, 1, 5, '9A4ipvlGPoAaBakr8Aw9Fm45zVk7SaM4xRhpK8_l6Gg', '@JOB_ROOT@/exp-5/trial-5', '00000000-0000-0000-0000-000000000005', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '2026-11-30 10:48:41.05683+00', '2026-11-30 10:48:41.863756+00');
INSERT INTO public.trials VALUES (6, 6, 'ERROR', '{"lr": 0.1}', 1750778854, 0, 1, 5, 'PJT7u1IEwRUgVKpCH4I1svH2JlItjj9rziLFo5uiFcE', '@JOB_ROOT@/exp-6/trial-6', '00000000-0000-0000-0000-000000000006', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '{"metrics": {"validation_loss": 0.5}, "steps_completed": 5}', '2026-11-30 10:48:41.076286+00', '2026-11-30 10:48:41.863572+00');
INSERT INTO public.trials VALUES (3, 3, 'PAUSED', '{"lr": 0.1}', 1287593508, 0, 1, 0, 'ESGgFypTOKGaTgn46GXzxAkoePKqPH84zB7c0_bajjk', '@JOB_ROOT@/exp-3/trial-3', NULL, NULL, NULL, '2026-11-30 10:48:41.043073+00', NULL);


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
-- Name: state_changes_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.state_changes_id_seq', 28, true);


--
-- Name: trial_logs_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.trial_logs_id_seq', 8, true);


--
-- Name: trials_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.trials_id_seq', 6, true);


--
-- Name: alembic_version alembic_version_pkc; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);


--
-- Name: checkpoints pk_checkpoints; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT pk_checkpoints PRIMARY KEY (uuid);


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
-- Name: state_changes pk_state_changes; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.state_changes
    ADD CONSTRAINT pk_state_changes PRIMARY KEY (id);


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
-- Name: ix_checkpoints_trial_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_checkpoints_trial_id ON public.checkpoints USING btree (trial_id);


--
-- Name: ix_experiments_owner; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_owner ON public.experiments USING btree (owner);


--
-- Name: ix_experiments_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_experiments_state ON public.experiments USING btree (state);


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
-- Name: ix_metrics_trial_group_step; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_metrics_trial_group_step ON public.metrics USING btree (trial_id, "group", steps_completed);


--
-- Name: ix_state_changes_entity; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_state_changes_entity ON public.state_changes USING btree (entity_kind, entity_id);


--
-- Name: ix_trial_logs_trial_id_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trial_logs_trial_id_id ON public.trial_logs USING btree (trial_id, id);


--
-- Name: ix_trials_experiment_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_experiment_id ON public.trials USING btree (experiment_id);


--
-- Name: ix_trials_state; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_trials_state ON public.trials USING btree (state);


--
-- Name: checkpoints fk_checkpoints_trial_id_trials; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.checkpoints
    ADD CONSTRAINT fk_checkpoints_trial_id_trials FOREIGN KEY (trial_id) REFERENCES public.trials(id) ON DELETE CASCADE;


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
-- PostgreSQL database dump complete
--


