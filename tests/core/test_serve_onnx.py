"""``oarkit serve`` on an ONNX export folder: the OIP metadata of the graph's own tensors, ``infer`` equal to the
artifact run in process, ``predict`` equal to the predictor on the export, and refused tensor requests.

The tiny clas run (PP-LCNet x0.25, two epochs on 32x32 images) trains in about ten seconds and exports in about
twenty.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("onnxruntime")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.cli import main  # noqa: E402
from oarkit.core.serve import ServeConfig, create_app  # noqa: E402


@pytest.fixture(scope="module")
def onnx_export(colour_clas_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("serve_onnx")
    assert main(["export", str(colour_clas_run), "--format", "onnx", "--output-dir", str(out)]) == 0
    return out / "onnx"


def test_oip_metadata_and_infer_run_the_graph(onnx_export):
    from oarkit.core.deploy import DeployedModel

    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    with TestClient(create_app(ServeConfig(sources=(str(onnx_export),), name="lcnet"),
                               background_load=False)) as client:
        meta = client.get("/v2/models/lcnet").json()
        assert meta == {"name": "lcnet", "versions": ["1"], "platform": "onnxruntime_onnx",
                        "inputs": [{"name": "images", "datatype": "FP32", "shape": [-1, 3, 32, 32]}],
                        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 3]}]}
        tensor = {"name": "images", "shape": [2, 3, 32, 32], "datatype": "FP32", "data": x.reshape(-1).tolist()}
        answer = client.post("/v2/models/lcnet/infer", json={"id": "r1", "inputs": [tensor]})
        assert answer.status_code == 200
        body = answer.json()
        assert body["id"] == "r1" and body["model_name"] == "lcnet"
        (out,) = body["outputs"]
        assert out["name"] == "logits" and out["datatype"] == "FP32" and out["shape"] == [2, 3]
        want = DeployedModel(onnx_export).run_numpy(x)[0]
        np.testing.assert_allclose(np.asarray(out["data"], np.float32).reshape(2, 3), want, rtol=1e-6, atol=1e-6)
        refusals = [
            ({"inputs": []}, "OIP inference request"),
            ({"inputs": [dict(tensor, name="pixels")]}, "not an input of this model"),
            ({"inputs": [dict(tensor, datatype="FLOAT")]}, "not a tensor datatype"),
            ({"inputs": [dict(tensor, shape=[2, 3, 32])]}, "shape [2, 3, 32] takes 192"),
            ({"inputs": [dict(tensor, shape=[1, 3, 31, 32], data=x.reshape(-1)[:2976].tolist())]}, "axis 2 is 31"),
            ({"inputs": [dict(tensor, data=["a"] * 6144)]}, "not a list of FP32 numbers"),
            ({"inputs": [tensor], "outputs": [{"name": "probs"}]}, "not outputs of model"),
            ({"inputs": [{"name": "images"}]}, "name, shape, datatype and data"),
        ]
        for request, fragment in refusals:
            refused = client.post("/v2/models/lcnet/infer", json=request)
            assert refused.status_code == 400 and fragment in refused.json()["error"], (request.keys(), refused.text)


def test_predict_on_the_export_answers_what_its_predictor_answers(onnx_export):
    from oarkit.clas import Classifier

    rng = np.random.default_rng(3)
    arrays = [rng.integers(0, 256, (20 + 10 * i, 30, 3), dtype=np.uint8) for i in range(3)]
    files = [("file", (f"{i}.png", cv2.imencode(".png", cv2.cvtColor(a, cv2.COLOR_RGB2BGR))[1].tobytes(),
                       "image/png")) for i, a in enumerate(arrays)]
    with TestClient(create_app(ServeConfig(sources=(str(onnx_export),)), background_load=False)) as client:
        (entry,) = client.get("/v1/models").json()["models"]
        assert entry["name"] == "onnx" and entry["format"] == "onnx" and entry["task"] == "clas"
        answer = client.post("/v1/models/onnx/predict", files=files, data={"topk": "2"})
    assert answer.json() == {"results": [r.to_dict() for r in Classifier(str(onnx_export), topk=2)(arrays)]}


def test_tritons_http_client_works_unchanged(onnx_export, tmp_path):
    """tritonclient[http] against a served ONNX export: health, model readiness, metadata and infer (JSON
    tensors, as KServe's and Triton's clients send them without the binary extension)."""
    httpclient = pytest.importorskip("tritonclient.http")
    from oarkit.core.deploy import DeployedModel

    from .conftest import start_server

    server, base = start_server([str(onnx_export), "--name", "lcnet"], tmp_path / "server.log", seconds=90)
    try:
        client = httpclient.InferenceServerClient(url=base.removeprefix("http://"))
        assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("lcnet")
        meta = client.get_model_metadata("lcnet")
        assert meta["inputs"] == [{"name": "images", "datatype": "FP32", "shape": [-1, 3, 32, 32]}]
        x = np.random.default_rng(1).standard_normal((3, 3, 32, 32)).astype(np.float32)
        tensor = httpclient.InferInput("images", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x, binary_data=False)
        result = client.infer("lcnet", [tensor], outputs=[httpclient.InferRequestedOutput("logits", binary_data=False)],
                              request_id="t1")
        assert result.get_response()["id"] == "t1"
        np.testing.assert_allclose(result.as_numpy("logits"), DeployedModel(onnx_export).run_numpy(x)[0],
                                   rtol=1e-6, atol=1e-6)
        from tritonclient.utils import InferenceServerException

        with pytest.raises(InferenceServerException, match="missing"):  # the server's 404, as the client raises it
            client.get_model_metadata("missing")
        client.close()
    finally:
        server.kill()
        server.wait()
