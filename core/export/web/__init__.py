"""Web export: a static folder that runs a kit's ONNX model(s) in the browser on onnxruntime-web.

The folder holds ``index.html`` (pick or drop an image; the picture, the latency and the JSON), ``oarkit.js`` (the
page API ``window.oarkit``, contract at its top), the kit's module as ``kit.js``, ``models/<name>.onnx``,
``deploy.json`` (what each model's deploy.yaml says, as JSON) and onnxruntime-web's files in ``ort/``, copied from
the npm cache ``make web-deps`` fills: no CDN, no network at run time.

    from oarkit.core.export.web import write_web_folder
    write_web_folder("out", task_id="clas", kit_script=Path(".../clas.js"), models={"model": onnx},
                     deploy={"models": {"model": deploy_yaml_dict}}, title="digits")
"""

from oarkit.core.export.web.folder import PAGE_FILES, write_web_folder
from oarkit.core.export.web.kit_export import QUANTIZED_FORMATS, export_onnx_for_web, export_web
from oarkit.core.export.web.runtime import (
    ORT_WEB_FILES,
    ORT_WEB_VERSION,
    install_command,
    npm_file,
    ort_web_files,
    web_home,
    web_runtime_dir,
)

__all__ = [
    "ORT_WEB_FILES", "ORT_WEB_VERSION", "PAGE_FILES", "QUANTIZED_FORMATS", "export_onnx_for_web", "export_web",
    "install_command", "npm_file", "ort_web_files", "web_home", "web_runtime_dir", "write_web_folder",
]
