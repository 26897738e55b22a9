BEGIN TRANSACTION;
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT INTO "alembic_version" VALUES('0001');
CREATE TABLE checkpoints (
	uuid VARCHAR(64) NOT NULL, 
	trial_id INTEGER NOT NULL, 
	steps_completed BIGINT NOT NULL, 
	metadata JSON NOT NULL, 
	resources JSON NOT NULL, 
	validation_metrics JSON, 
	state VARCHAR(16) NOT NULL, 
	reported_at DATETIME NOT NULL, 
	CONSTRAINT pk_checkpoints PRIMARY KEY (uuid), 
	CONSTRAINT fk_checkpoints_trial_id_trials FOREIGN KEY(trial_id) REFERENCES trials (id) ON DELETE CASCADE
);
INSERT INTO "checkpoints" VALUES('00000000-0000-0000-0000-000000000005',5,5,'{"framework": "fixture"}','{"state.pt": 1234}','{"validation_loss": 0.5}','ACTIVE','2026-11-30 10:48:34.243761');
INSERT INTO "checkpoints" VALUES('00000000-0000-0000-0000-000000000004',4,10,'{"framework": "fixture"}','{"state.pt": 1234}','{"validation_loss": 0.5}','ACTIVE','2026-11-30 10:48:34.252887');
INSERT INTO "checkpoints" VALUES('00000000-0000-0000-0000-000000000006',6,5,'{"framework": "fixture"}','{"state.pt": 1234}','{"validation_loss": 0.5}','ACTIVE','2026-11-30 10:48:34.262843');
INSERT INTO "checkpoints" VALUES('00000000-0000-0000-0000-000000000001',1,5,'{"framework": "fixture"}','{"state.pt": 1234}','{"validation_loss": 0.5}','ACTIVE','2026-11-30 10:48:34.271074');
CREATE TABLE experiments (
	id INTEGER NOT NULL, 
	name VARCHAR(256) NOT NULL, 
	description TEXT NOT NULL, 
	labels JSON NOT NULL, 
	owner VARCHAR(128) NOT NULL, 
	state VARCHAR(32) NOT NULL, 
	config JSON NOT NULL, 
	original_config TEXT NOT NULL, 
	context BLOB NOT NULL, 
	searcher_name VARCHAR(32) NOT NULL, 
	resource_pool VARCHAR(128), 
	archived BOOLEAN NOT NULL, 
	created_at DATETIME NOT NULL, 
	ended_at DATETIME, 
	CONSTRAINT pk_experiments PRIMARY KEY (id)
);
INSERT INTO "experiments" VALUES(1,'running','','[]','alice','ACTIVE','{"name": "running", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "max_restarts": 0, "description": "", "labels": [], "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}, "reproducibility": {"experiment_seed": 1581671977}}','name: running
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
',X'1F8B080082540D6B02FFEDCD310AC2401404D05F7B0ABB6823AB2CE63CE9DC2684752DBCBD4B1AC15E41F25E33C334D3EA54E6D3F28C2F4ADD35E735BBCF4CE99CDF7DDDC77C19639FE2071EF736D57E19DBB4D432B7C3702BC37117000000000000000000FC8D172B91142B00280000','single',NULL,0,'2026-11-30 10:48:34.066992',NULL);
INSERT INTO "experiments" VALUES(2,'queued','','[]','alice','ACTIVE','{"name": "queued", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "max_restarts": 0, "description": "", "labels": [], "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}, "reproducibility": {"experiment_seed": 1059140563}}','name: queued
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
',X'1F8B080082540D6B02FFEDCD310AC2401404D05F7B0ABB6823AB2CE63CE9DC2684752DBCBD4B1AC15E41F25E33C334D3EA54E6D3F28C2F4ADD35E735BBCF4CE99CDF7DDDC77C19639FE2071EF736D57E19DBB4D432B7C3702BC37117000000000000000000FC8D172B91142B00280000','single',NULL,0,'2026-11-30 10:48:34.076583',NULL);
INSERT INTO "experiments" VALUES(3,'paused','','[]','alice','PAUSED','{"name": "paused", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "max_restarts": 0, "description": "", "labels": [], "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}, "reproducibility": {"experiment_seed": 1320562408}}','name: paused
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
',X'1F8B080082540D6B02FFEDCD310AC2401404D05F7B0ABB6823AB2CE63CE9DC2684752DBCBD4B1AC15E41F25E33C334D3EA54E6D3F28C2F4ADD35E735BBCF4CE99CDF7DDDC77C19639FE2071EF736D57E19DBB4D432B7C3702BC37117000000000000000000FC8D172B91142B00280000','single',NULL,0,'2026-11-30 10:48:34.089341',NULL);
INSERT INTO "experiments" VALUES(4,'completed','','[]','alice','COMPLETED','{"name": "completed", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "max_restarts": 0, "description": "", "labels": [], "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}, "reproducibility": {"experiment_seed": 1942051789}}','name: completed
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
',X'1F8B080082540D6B02FFEDCD310AC2401404D05F7B0ABB6823AB2CE63CE9DC2684752DBCBD4B1AC15E41F25E33C334D3EA54E6D3F28C2F4ADD35E735BBCF4CE99CDF7DDDC77C19639FE2071EF736D57E19DBB4D432B7C3702BC37117000000000000000000FC8D172B91142B00280000','single',NULL,0,'2026-11-30 10:48:34.094096','2026-11-30 10:48:34.288609');
INSERT INTO "experiments" VALUES(5,'canceled','','[]','alice','CANCELED','{"name": "canceled", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "max_restarts": 0, "description": "", "labels": [], "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}, "reproducibility": {"experiment_seed": 1838966223}}','name: canceled
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
',X'1F8B080082540D6B02FFEDCD310AC2401404D05F7B0ABB6823AB2CE63CE9DC2684752DBCBD4B1AC15E41F25E33C334D3EA54E6D3F28C2F4ADD35E735BBCF4CE99CDF7DDDC77C19639FE2071EF736D57E19DBB4D432B7C3702BC37117000000000000000000FC8D172B91142B00280000','single',NULL,0,'2026-11-30 10:48:34.098357','2026-11-30 10:48:34.292351');
INSERT INTO "experiments" VALUES(6,'error','','[]','alice','ERROR','{"name": "error", "entrypoint": "python3 train.py", "hyperparameters": {"lr": 0.1}, "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}, "smaller_is_better": true}, "resources": {"slots_per_trial": 1}, "max_restarts": 0, "description": "", "labels": [], "checkpoint_storage": {"type": "shared_fs", "host_path": "@JOB_ROOT@/checkpoints"}, "reproducibility": {"experiment_seed": 1439605826}}','name: error
entrypoint: python3 train.py
hyperparameters:
  lr: 0.1
searcher: {name: single, metric: validation_loss, max_length: {batches: 10}}
resources: {slots_per_trial: 1}
max_restarts: 0
',X'1F8B080082540D6B02FFEDCD310AC2401404D05F7B0ABB6823AB2CE63CE9DC2684752DBCBD4B1AC15E41F25E33C334D3EA54E6D3F28C2F4ADD35E735BBCF4CE99CDF7DDDC77C19639FE2071EF736D57E19DBB4D432B7C3702BC37117000000000000000000FC8D172B91142B00280000','single',NULL,0,'2026-11-30 10:48:34.101690','2026-11-30 10:48:34.291587');
CREATE TABLE jobs (
	id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	run_id INTEGER NOT NULL, 
	job_id VARCHAR(64), 
	active BOOLEAN NOT NULL, 
	cancel_requested BOOLEAN NOT NULL, 
	phase VARCHAR(32), 
	native_state VARCHAR(64), 
	reason TEXT, 
	exit_code INTEGER, 
	nodes TEXT, 
	script_path TEXT NOT NULL, 
	log_offsets JSON NOT NULL, 
	submitted_at DATETIME NOT NULL, 
	ended_at DATETIME, 
	CONSTRAINT pk_jobs PRIMARY KEY (id), 
	CONSTRAINT fk_jobs_trial_id_trials FOREIGN KEY(trial_id) REFERENCES trials (id) ON DELETE CASCADE
);
INSERT INTO "jobs" VALUES(1,1,1,'1001',1,0,'RUNNING','RUNNING',NULL,0,'node1','@JOB_ROOT@/exp-1/trial-1/job-1.sh','{"out": 24, "err": 0}','2026-11-30 10:48:34.118359',NULL);
INSERT INTO "jobs" VALUES(2,2,1,'1002',1,0,'PENDING','PENDING',NULL,0,'node1','@JOB_ROOT@/exp-2/trial-2/job-1.sh','{"out": 0, "err": 0}','2026-11-30 10:48:34.125690',NULL);
INSERT INTO "jobs" VALUES(3,3,1,'1003',0,0,'CANCELLED','PENDING',NULL,0,'node1','@JOB_ROOT@/exp-3/trial-3/job-1.sh','{"out": 0, "err": 0}','2026-11-30 10:48:34.130184',NULL);
INSERT INTO "jobs" VALUES(4,4,1,'1004',0,0,'COMPLETED','COMPLETED',NULL,0,'node1','@JOB_ROOT@/exp-4/trial-4/job-1.sh','{"out": 26, "err": 0}','2026-11-30 10:48:34.138758','2026-11-30 10:48:34.283270');
INSERT INTO "jobs" VALUES(5,5,1,'1005',0,1,'CANCELLED','CANCELLED',NULL,0,'node1','@JOB_ROOT@/exp-5/trial-5/job-1.sh','{"out": 25, "err": 0}','2026-11-30 10:48:34.149691','2026-11-30 10:48:34.283403');
INSERT INTO "jobs" VALUES(6,6,1,'1006',0,0,'FAILED','FAILED',NULL,1,'node1','@JOB_ROOT@/exp-6/trial-6/job-1.sh','{"out": 22, "err": 0}','2026-11-30 10:48:34.153793','2026-11-30 10:48:34.283487');
CREATE TABLE metrics (
	id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	"group" VARCHAR(32) NOT NULL, 
	steps_completed BIGINT NOT NULL, 
	name VARCHAR(256) NOT NULL, 
	value FLOAT NOT NULL, 
	reported_at DATETIME NOT NULL, 
	CONSTRAINT pk_metrics PRIMARY KEY (id), 
	CONSTRAINT fk_metrics_trial_id_trials FOREIGN KEY(trial_id) REFERENCES trials (id) ON DELETE CASCADE
);
INSERT INTO "metrics" VALUES(1,5,'training',1,'loss',1.0,'2026-11-30 10:48:34.228755');
INSERT INTO "metrics" VALUES(2,5,'training',2,'loss',0.5,'2026-11-30 10:48:34.228755');
INSERT INTO "metrics" VALUES(3,5,'training',3,'loss',3.33333333333333314829e-01,'2026-11-30 10:48:34.228755');
INSERT INTO "metrics" VALUES(4,5,'training',4,'loss',0.25,'2026-11-30 10:48:34.228755');
INSERT INTO "metrics" VALUES(5,5,'training',5,'loss',0.2,'2026-11-30 10:48:34.228755');
INSERT INTO "metrics" VALUES(6,5,'validation',5,'validation_loss',0.5,'2026-11-30 10:48:34.235196');
INSERT INTO "metrics" VALUES(7,4,'training',1,'loss',1.0,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(8,4,'training',2,'loss',0.5,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(9,4,'training',3,'loss',3.33333333333333314829e-01,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(10,4,'training',4,'loss',0.25,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(11,4,'training',5,'loss',0.2,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(12,4,'training',6,'loss',1.66666666666666657414e-01,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(13,4,'training',7,'loss',1.42857142857142849212e-01,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(14,4,'training',8,'loss',0.125,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(15,4,'training',9,'loss',1.11111111111111104943e-01,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(16,4,'training',10,'loss',0.1,'2026-11-30 10:48:34.246343');
INSERT INTO "metrics" VALUES(17,4,'validation',10,'validation_loss',0.5,'2026-11-30 10:48:34.250288');
INSERT INTO "metrics" VALUES(18,6,'training',1,'loss',1.0,'2026-11-30 10:48:34.259012');
INSERT INTO "metrics" VALUES(19,6,'training',2,'loss',0.5,'2026-11-30 10:48:34.259012');
INSERT INTO "metrics" VALUES(20,6,'training',3,'loss',3.33333333333333314829e-01,'2026-11-30 10:48:34.259012');
INSERT INTO "metrics" VALUES(21,6,'training',4,'loss',0.25,'2026-11-30 10:48:34.259012');
INSERT INTO "metrics" VALUES(22,6,'training',5,'loss',0.2,'2026-11-30 10:48:34.259012');
INSERT INTO "metrics" VALUES(23,6,'validation',5,'validation_loss',0.5,'2026-11-30 10:48:34.260327');
INSERT INTO "metrics" VALUES(24,1,'training',1,'loss',1.0,'2026-11-30 10:48:34.264771');
INSERT INTO "metrics" VALUES(25,1,'training',2,'loss',0.5,'2026-11-30 10:48:34.264771');
INSERT INTO "metrics" VALUES(26,1,'training',3,'loss',3.33333333333333314829e-01,'2026-11-30 10:48:34.264771');
INSERT INTO "metrics" VALUES(27,1,'training',4,'loss',0.25,'2026-11-30 10:48:34.264771');
INSERT INTO "metrics" VALUES(28,1,'training',5,'loss',0.2,'2026-11-30 10:48:34.264771');
INSERT INTO "metrics" VALUES(29,1,'validation',5,'validation_loss',0.5,'2026-11-30 10:48:34.268050');
CREATE TABLE state_changes (
	id INTEGER NOT NULL, 
	entity_kind VARCHAR(16) NOT NULL, 
	entity_id INTEGER NOT NULL, 
	from_state VARCHAR(32), 
	to_state VARCHAR(32) NOT NULL, 
	cause TEXT NOT NULL, 
	actor VARCHAR(128) NOT NULL, 
	at DATETIME NOT NULL, 
	CONSTRAINT pk_state_changes PRIMARY KEY (id)
);
INSERT INTO "state_changes" VALUES(1,'experiment',1,NULL,'ACTIVE','experiment created','alice','2026-11-30 10:48:34.069886');
INSERT INTO "state_changes" VALUES(2,'experiment',2,NULL,'ACTIVE','experiment created','alice','2026-11-30 10:48:34.077113');
INSERT INTO "state_changes" VALUES(3,'experiment',3,NULL,'ACTIVE','experiment created','alice','2026-11-30 10:48:34.090096');
INSERT INTO "state_changes" VALUES(4,'experiment',4,NULL,'ACTIVE','experiment created','alice','2026-11-30 10:48:34.094525');
INSERT INTO "state_changes" VALUES(5,'experiment',5,NULL,'ACTIVE','experiment created','alice','2026-11-30 10:48:34.098720');
INSERT INTO "state_changes" VALUES(6,'experiment',6,NULL,'ACTIVE','experiment created','alice','2026-11-30 10:48:34.102041');
INSERT INTO "state_changes" VALUES(7,'trial',1,NULL,'QUEUED','created by the single searcher','system','2026-11-30 10:48:34.108577');
INSERT INTO "state_changes" VALUES(8,'trial',2,NULL,'QUEUED','created by the single searcher','system','2026-11-30 10:48:34.110081');
INSERT INTO "state_changes" VALUES(9,'trial',3,NULL,'QUEUED','created by the single searcher','system','2026-11-30 10:48:34.110666');
INSERT INTO "state_changes" VALUES(10,'trial',4,NULL,'QUEUED','created by the single searcher','system','2026-11-30 10:48:34.111203');
INSERT INTO "state_changes" VALUES(11,'trial',5,NULL,'QUEUED','created by the single searcher','system','2026-11-30 10:48:34.111710');
INSERT INTO "state_changes" VALUES(12,'trial',6,NULL,'QUEUED','created by the single searcher','system','2026-11-30 10:48:34.112149');
INSERT INTO "state_changes" VALUES(13,'trial',3,'QUEUED','PAUSED','paused by alice','alice','2026-11-30 10:48:34.199475');
INSERT INTO "state_changes" VALUES(14,'experiment',3,'ACTIVE','PAUSED','paused by alice','alice','2026-11-30 10:48:34.199480');
INSERT INTO "state_changes" VALUES(15,'trial',1,'QUEUED','RUNNING','Slurm job 1001 running on node1','system','2026-11-30 10:48:34.212880');
INSERT INTO "state_changes" VALUES(16,'trial',4,'QUEUED','RUNNING','Slurm job 1004 running on node1','system','2026-11-30 10:48:34.218090');
INSERT INTO "state_changes" VALUES(17,'trial',5,'QUEUED','RUNNING','Slurm job 1005 running on node1','system','2026-11-30 10:48:34.218937');
INSERT INTO "state_changes" VALUES(18,'trial',6,'QUEUED','RUNNING','Slurm job 1006 running on node1','system','2026-11-30 10:48:34.219474');
INSERT INTO "state_changes" VALUES(19,'experiment',5,'ACTIVE','STOPPING_KILLED','kill requested','alice','2026-11-30 10:48:34.274375');
INSERT INTO "state_changes" VALUES(20,'trial',5,'RUNNING','STOPPING_KILLED','experiment killed','alice','2026-11-30 10:48:34.274902');
INSERT INTO "state_changes" VALUES(21,'trial',4,'RUNNING','COMPLETED','Slurm job 1004 ended COMPLETED (exit code 0)','system','2026-11-30 10:48:34.284880');
INSERT INTO "state_changes" VALUES(22,'trial',5,'STOPPING_KILLED','CANCELED','Slurm job 1005 ended CANCELLED (exit code 0)','system','2026-11-30 10:48:34.284883');
INSERT INTO "state_changes" VALUES(23,'trial',6,'RUNNING','ERROR','Slurm job 1006 ended FAILED (exit code 1)','system','2026-11-30 10:48:34.284884');
INSERT INTO "state_changes" VALUES(24,'experiment',4,'ACTIVE','STOPPING_COMPLETED','all trials ended','system','2026-11-30 10:48:34.291043');
INSERT INTO "state_changes" VALUES(25,'experiment',4,'STOPPING_COMPLETED','COMPLETED','all trials ended','system','2026-11-30 10:48:34.291046');
INSERT INTO "state_changes" VALUES(26,'experiment',6,'ACTIVE','STOPPING_ERROR','no trial completed','system','2026-11-30 10:48:34.292017');
INSERT INTO "state_changes" VALUES(27,'experiment',6,'STOPPING_ERROR','ERROR','all trials ended','system','2026-11-30 10:48:34.292019');
INSERT INTO "state_changes" VALUES(28,'experiment',5,'STOPPING_KILLED','CANCELED','all trials ended','system','2026-11-30 10:48:34.292668');
CREATE TABLE trial_logs (
	id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	job_id VARCHAR(64), 
	rank INTEGER, 
	stream VARCHAR(8) NOT NULL, 
	line TEXT NOT NULL, 
	at DATETIME NOT NULL, 
	CONSTRAINT pk_trial_logs PRIMARY KEY (id), 
	CONSTRAINT fk_trial_logs_trial_id_trials FOREIGN KEY(trial_id) REFERENCES trials (id) ON DELETE CASCADE
);
INSERT INTO "trial_logs" VALUES(1,1,'1001',NULL,'stdout','training running','2026-11-30 10:48:34.210256');
INSERT INTO "trial_logs" VALUES(2,1,'1001',NULL,'stdout','step 5','2026-11-30 10:48:34.210263');
INSERT INTO "trial_logs" VALUES(3,4,'1004',NULL,'stdout','training completed','2026-11-30 10:48:34.212475');
INSERT INTO "trial_logs" VALUES(4,4,'1004',NULL,'stdout','step 5','2026-11-30 10:48:34.212480');
INSERT INTO "trial_logs" VALUES(5,5,'1005',NULL,'stdout','training canceled','2026-11-30 10:48:34.217692');
INSERT INTO "trial_logs" VALUES(6,5,'1005',NULL,'stdout','step 5','2026-11-30 10:48:34.217697');
INSERT INTO "trial_logs" VALUES(7,6,'1006',NULL,'stdout','training error','2026-11-30 10:48:34.218610');
INSERT INTO "trial_logs" VALUES(8,6,'1006',NULL,'stdout','step 5','2026-11-30 10:48:34.218615');
CREATE TABLE trials (
	id INTEGER NOT NULL, 
	experiment_id INTEGER NOT NULL, 
	state VARCHAR(32) NOT NULL, 
	hparams JSON NOT NULL, 
	seed BIGINT NOT NULL, 
	restarts INTEGER NOT NULL, 
	run_id INTEGER NOT NULL, 
	steps_completed BIGINT NOT NULL, 
	token VARCHAR(64) NOT NULL, 
	job_dir TEXT NOT NULL, 
	latest_checkpoint VARCHAR(64), 
	best_validation JSON, 
	latest_validation JSON, 
	created_at DATETIME NOT NULL, 
	ended_at DATETIME, 
	CONSTRAINT pk_trials PRIMARY KEY (id), 
	CONSTRAINT fk_trials_experiment_id_experiments FOREIGN KEY(experiment_id) REFERENCES experiments (id) ON DELETE CASCADE
);
INSERT INTO "trials" VALUES(1,1,'RUNNING','{"lr": 0.1}',1488051718,0,1,5,'ujMMN125MVdQFPul6pv-ZK3PxgNHaHipPTh3cPcFnuk','@JOB_ROOT@/exp-1/trial-1','00000000-0000-0000-0000-000000000001','{"steps_completed": 5, "metrics": {"validation_loss": 0.5}}','{"steps_completed": 5, "metrics": {"validation_loss": 0.5}}','2026-11-30 10:48:34.107778',NULL);
INSERT INTO "trials" VALUES(2,2,'QUEUED','{"lr": 0.1}',193490504,0,1,0,'c7CyqA-FENIIsFQjG6oyBOqV88p5rPqrkxkbljiLobQ','@JOB_ROOT@/exp-2/trial-2',NULL,NULL,NULL,'2026-11-30 10:48:34.109556',NULL);
INSERT INTO "trials" VALUES(3,3,'PAUSED','{"lr": 0.1}',346645119,0,1,0,'Uk2IVw8oNe79mXXNpnU2yrpai2k3drQToH5VZz6EGMw','@JOB_ROOT@/exp-3/trial-3',NULL,NULL,NULL,'2026-11-30 10:48:34.110257',NULL);
INSERT INTO "trials" VALUES(4,4,'COMPLETED','{"lr": 0.1}',1301020392,0,1,10,'4Gvu7CRpm_bNWHV1X_JKLN3kPbDdOCLL123CLfKTQgI','@JOB_ROOT@/exp-4/trial-4','00000000-0000-0000-0000-000000000004','{"steps_completed": 10, "metrics": {"validation_loss": 0.5}}','{"steps_completed": 10, "metrics": {"validation_loss": 0.5}}','2026-11-30 10:48:34.110825','2026-11-30 10:48:34.283297');
INSERT INTO "trials" VALUES(5,5,'CANCELED','{"lr": 0.1}',1769773760,0,1,5,'lcSRcu4tm0bhK-hJJGLI9JgsBrT6s847fpAwU2lBBr0','@JOB_ROOT@/exp-5/trial-5','00000000-0000-0000-0000-000000000005','{"steps_completed": 5, "metrics": {"validation_loss": 0.5}}','{"steps_completed": 5, "metrics": {"validation_loss": 0.5}}','2026-11-30 10:48:34.111350','2026-11-30 10:48:34.283414');
INSERT INTO "trials" VALUES(6,6,'ERROR','{"lr": 0.1}',2043552985,0,1,5,'MUG-TjLGqecRNquAsrsVWnwZs-o32oGKjDZxSgpy5Zk','@JOB_ROOT@/exp-6/trial-6','00000000-0000-0000-0000-000000000006','{"steps_completed": 5, "metrics": {"validation_loss": 0.5}}','{"steps_completed": 5, "metrics": {"validation_loss": 0.5}}','2026-11-30 10:48:34.111852','2026-11-30 10:48:34.283497');
CREATE INDEX ix_experiments_owner ON experiments (owner);
CREATE INDEX ix_experiments_state ON experiments (state);
CREATE INDEX ix_state_changes_entity ON state_changes (entity_kind, entity_id);
CREATE INDEX ix_trials_experiment_id ON trials (experiment_id);
CREATE INDEX ix_trials_state ON trials (state);
CREATE INDEX ix_checkpoints_trial_id ON checkpoints (trial_id);
CREATE INDEX ix_jobs_active ON jobs (active);
CREATE INDEX ix_jobs_job_id ON jobs (job_id);
CREATE INDEX ix_jobs_trial_id ON jobs (trial_id);
CREATE INDEX ix_metrics_trial_group_step ON metrics (trial_id, "group", steps_completed);
CREATE INDEX ix_trial_logs_trial_id_id ON trial_logs (trial_id, id);
COMMIT;
