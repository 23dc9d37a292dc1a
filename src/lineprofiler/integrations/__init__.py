"""Adapters to other people's runtimes (Ray, IPython) and metric stores (TensorBoard, W&B, MLflow). Each
is imported only when used."""
