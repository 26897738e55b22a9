DATA_DIRECTORY = "/tmp/data/cifar10"
LOCK_FILE = "/tmp/data/cifar10/cifar10.lock"
PREDICTIONS_DIRECTORY = "/tmp/inference_out/"
