"""The Open Inference Protocol (KServe v2) model endpoints: metadata, and JSON tensors in and out.

An export folder is described by its ``deploy.yaml`` (the graph's own inputs and outputs: names, datatypes,
shapes with ``-1`` for a dynamic axis) and ``infer`` runs its artifact on the tensors as given
(:class:`~oarkit.core.deploy.DeployedModel`). Any other source (a run directory, a registry name, a pipeline) is
described as it is served by ``/v1/models/{name}/predict``: BYTES inputs, JSON results; tensor ``infer`` on it
answers 501 with the fix (export it and serve the export folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.serve.errors import RequestError
from oarkit.core.serve.models import ServedModel

#: numpy dtype name <-> OIP datatype
DATATYPES = {"bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
             "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "float16": "FP16",
             "float32": "FP32", "float64": "FP64"}
NUMPY_TYPES = {v: k for k, v in DATATYPES.items()}


def _tensor(info: Any) -> dict[str, Any]:
    return {"name": info.name, "datatype": DATATYPES.get(str(info.dtype), str(info.dtype).upper()),
            "shape": [d if isinstance(d, int) else -1 for d in info.shape]}


def is_tensor_model(model: ServedModel) -> bool:
    """Whether ``infer`` runs the model's artifact on raw tensors (an export folder)."""
    from oarkit.core.deploy.manifest import is_export_dir

    return is_export_dir(model.source)


def metadata(model: ServedModel) -> dict[str, Any]:
    """``GET /v2/models/{name}``: name, versions, platform, inputs and outputs."""
    if is_tensor_model(model):
        from oarkit.core.deploy.manifest import read_manifest

        manifest = read_manifest(model.source)
        return {"name": model.name, "versions": ["1"], "platform": f"{manifest.runtime}_{manifest.format}",
                "inputs": [_tensor(t) for t in manifest.inputs], "outputs": [_tensor(t) for t in manifest.outputs]}
    kind = "image" if model.modality == "image" else "text"
    return {"name": model.name, "versions": ["1"], "platform": f"oarkit_{model.format}",
            "inputs": [{"name": kind, "datatype": "BYTES", "shape": [-1]}],
            "outputs": [{"name": "result", "datatype": "BYTES", "shape": [-1]}]}


def _artifact(model: ServedModel) -> Any:
    """The model's artifact, opened once for ``infer`` (beside the predictor's own runtime)."""
    from oarkit.core.deploy import DeployedModel

    with model._lock:
        if model._artifact is None:
            model._artifact = DeployedModel(Path(model.source))
        return model._artifact


def _array(spec: Any, index: int, expected: dict[str, Any]) -> tuple[str, np.ndarray]:
    what = f"inputs[{index}]"
    if not isinstance(spec, dict) or not {"name", "shape", "datatype", "data"} <= set(spec):
        raise RequestError(f"{what} must be an object with name, shape, datatype and data (the OIP JSON tensor)")
    name, datatype = spec["name"], spec["datatype"]
    if name not in expected:
        raise RequestError(f"{what}.name {name!r} is not an input of this model; it takes {', '.join(expected)}")
    if datatype not in NUMPY_TYPES:
        raise RequestError(f"{what}.datatype {datatype!r} is not a tensor datatype ({', '.join(NUMPY_TYPES)})")
    shape = spec["shape"]
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise RequestError(f"{what}.shape must be a list of non-negative integers, got {shape!r}")
    try:
        array = np.asarray(spec["data"], dtype=NUMPY_TYPES[datatype])
    except (TypeError, ValueError) as err:
        raise RequestError(f"{what}.data is not a list of {datatype} numbers: {err}") from err
    if array.size != int(np.prod(shape)):
        raise RequestError(f"{what}.data holds {array.size} values, its shape {shape} takes {int(np.prod(shape))}")
    return name, array.reshape(shape)


def infer(model: ServedModel, body: Any) -> dict[str, Any]:
    """``POST /v2/models/{name}/infer``: run the artifact on the request's tensors (in a worker thread).

    Raises:
        RequestError: 501 for a model that is not an export folder; 400 for a malformed request or tensors the
            graph does not take (the message says which).
    """
    from oarkit.core.errors import OarkitError

    if not is_tensor_model(model):
        raise RequestError(f"model {model.name!r} is served from {model.format} ({model.source}), not an export "
                           "folder, so it has no tensor graph to run; use POST /v1/models/{name}/predict, or export "
                           "it (oarkit export RUN --format onnx) and serve the export folder", status=501)
    if not isinstance(body, dict) or not isinstance(body.get("inputs"), list) or not body["inputs"]:
        raise RequestError('the body must be an OIP inference request: {"inputs": [{"name", "shape", "datatype", '
                           '"data"}, ...]}')
    artifact = _artifact(model)
    expected = {t.name: t for t in artifact.manifest.inputs}
    given = dict(_array(spec, i, expected) for i, spec in enumerate(body["inputs"]))
    missing = [name for name in expected if name not in given]
    if missing:
        raise RequestError(f"the request lacks the input(s) {', '.join(missing)} of model {model.name!r}")
    try:
        outputs = artifact.run_numpy(*(given[name] for name in expected))
    except OarkitError as err:
        raise RequestError(str(err)) from err
    infos = artifact.manifest.outputs or [None] * len(outputs)
    names = [info.name if info is not None else f"output_{i}" for i, info in enumerate(infos)]
    wanted = [o.get("name") for o in body.get("outputs") or [] if isinstance(o, dict)]
    unknown = [name for name in wanted if name not in names]
    if unknown:
        raise RequestError(f"outputs {unknown} are not outputs of model {model.name!r}; it has {', '.join(names)}")
    answer = []
    for name, array in zip(names, outputs):
        if wanted and name not in wanted:
            continue
        array = np.asarray(array)
        answer.append({"name": name, "datatype": DATATYPES.get(array.dtype.name, array.dtype.name.upper()),
                       "shape": list(array.shape), "data": array.reshape(-1).tolist()})
    result: dict[str, Any] = {"model_name": model.name, "model_version": "1", "outputs": answer}
    if "id" in body:
        result["id"] = body["id"]
    return result
