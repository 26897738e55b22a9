# Determined's Python SDK, as Determined's own documentation uses it, run against hpcdet.
#
# Every section is a run of lines copied from a file of Determined 0.38.1 (commit
# c1e9c6d7b8, Apache License 2.0, Copyright 2017-2024 Determined.ai, Inc.), kept byte for
# byte under tests/data/determined/: the marker above it names the file and the lines.
# Only their import lines differ (`determined` -> `hpcdet`). The "glue" sections bind the
# placeholders Determined's snippets leave to the reader (`id`, `exp_id`, `samples`...);
# tests/compat/test_sdk_workflow.py checks all of this and allows only its listed glue
# lines. Run from a directory holding my_config.yaml and the model code (model_dir=".").

# Determined: docs/reference/python-sdk/example-workflows.rst, lines 20-23
from hpcdet.experimental import client

# We will assume that you have called `det user login`, so this is unnecessary:
# client.login(master=..., user=..., password=...)

# Determined: docs/reference/python-sdk/example-workflows.rst, lines 29-31
# Config can be a path to a config file or a Python dict of the config.
exp = client.create_experiment(config="my_config.yaml", model_dir=".")
print(f"started experiment {exp.id}")

# Determined: docs/reference/python-sdk/example-workflows.rst, lines 38-39
exit_status = exp.wait()
print(f"experiment completed with status {exit_status}")

# Determined: docs/reference/python-sdk/example-workflows.rst, lines 45-46
best_checkpoint = exp.list_checkpoints()[0]
print(f"best checkpoint was {best_checkpoint.uuid}")

# Determined: docs/reference/python-sdk/example-workflows.rst, lines 63-64
for logline in exp.await_first_trial().iter_logs():
   print(logline)

# hpcdet-compat: glue
id = exp.id

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 51-53
from hpcdet.experimental import client

checkpoint = client.get_experiment(id).list_checkpoints()[0]

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 60-67
from hpcdet.experimental import checkpoint, client

checkpoints = (
    client.get_experiment(id).list_checkpoints(
        sort_by="accuracy",
        order_by=client.OrderBy.DESC
    )
)

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 75-80
from hpcdet.experimental import checkpoint, client

checkpoints = client.get_experiment(id).list_checkpoints(
    sort_by=checkpoint.CheckpointSortBy.TRIAL_ID,
    order_by=client.OrderBy.DESC
)

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 125-130
from hpcdet.experimental import client

checkpoint = client.get_experiment(id).list_checkpoints()[0]
checkpoint_path = checkpoint.download()

specific_path = checkpoint.download(path="specific-checkpoint-path")

# hpcdet-compat: glue
your_experiment_id = exp.id

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 414-425
from hpcdet.experimental import client

# Replace 'your_experiment_id' with the actual experiment ID
exp_id = your_experiment_id

checkpoints = client.get_experiment(exp_id).list_checkpoints()

for checkpoint in checkpoints:
    print(f"Experiment ID: {exp_id}, Checkpoint UUID: {checkpoint.uuid}")

    for filepath, size_in_bytes in checkpoint.resources.items():
        print(f"Filepath: {filepath}, Size: {size_in_bytes} bytes")

# hpcdet-compat: glue
id = exp.list_trials()[0].id

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 91-106
from hpcdet.experimental import checkpoint, client

trial = client.get_trial(id)

most_recent_checkpoint = trial.list_checkpoints(
    sort_by=checkpoint.CheckpointSortBy.END_TIME,
    order_by=client.OrderBy.DESC,
    max_results=1
)[0]

# Sort checkpoints by "accuracy" metric, if your training code reports it.
most_accurate_checkpoint = trial.list_checkpoints(
    sort_by="accuracy",
    order_by=client.OrderBy.DESC,
    max_results=1
)[0]

# Determined: e2e_tests/tests/experiment/test_noop.py, lines 52-55
def count_metrics() -> int:
    return sum(1 for _ in trial.iter_metrics("training"))

metrics_before = count_metrics()

# hpcdet-compat: glue
id = exp.id
import torch
samples = torch.zeros(3, 64)

# Determined: docs/model-dev-guide/model-management/checkpoints.rst, lines 146-154
from hpcdet.experimental import client
from hpcdet import pytorch

checkpoint = client.get_experiment(id).list_checkpoints()[0]
path = checkpoint.download()
trial = pytorch.load_trial_from_checkpoint_path(path)
model = trial.model

predictions = model(samples)

# Determined: docs/model-dev-guide/model-management/model-registry-org.rst, lines 80-86
from hpcdet.experimental import Determined

model = Determined().create_model(
    "model_name",
    description="optional description",
    metadata={"optional": "JSON serializable dictionary"},
)

# hpcdet-compat: glue
exp_id = exp.id

# Determined: docs/model-dev-guide/model-management/model-registry-org.rst, lines 218-226
from hpcdet.experimental import Determined

d = Determined()

checkpoint = d.get_experiment(exp_id).list_checkpoints()[0]

model = d.get_model("model_name")

model_version = model.register_version(checkpoint.uuid)

# Determined: docs/model-dev-guide/model-management/model-registry-org.rst, lines 246-248
from hpcdet.experimental import Determined

model = Determined().get_model("model_name")

# Determined: docs/model-dev-guide/model-management/model-registry-org.rst, lines 251-259
latest_version = model.get_version()

# Depending on the framework used to create the checkpoint, loading from
# the checkpoint may return either a PyTorchTrial instance or a TensorFlow
# object representing the trained model.
path = latest_version.checkpoint.download()

from hpcdet import pytorch
my_pytorch_trial = pytorch.load_trial_from_checkpoint_path(path)

# Determined: docs/model-dev-guide/model-management/model-registry-org.rst, lines 269-273
from hpcdet.experimental import Determined

model = Determined().get_model("model_name")

model_versions = model.get_versions()
