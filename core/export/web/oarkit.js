// oarkit web runtime: loads deploy.json, opens the model(s) on onnxruntime-web (vendored in ./ort/, no network)
// and hands images to the kit's module (./kit.js).
//
// Page API (window.oarkit):
//   ready: Promise             resolved once the model(s) are loaded
//   predict: async (input[, options]) => result
//       input: an image URL string, HTMLImageElement, ImageBitmap, ImageData or Blob; result: the JSON the Python
//       predictor's to_dict() gives for that image. options are the kit's (clas {topk}, det {threshold}).
//   deploy, threads, crossOriginIsolated, last ({result, ms, image}), debug() (the kit's internals of the last
//   run, e.g. seg's class map), render(container, image, result), session(name) (a model's InferenceSession), ort
//
// Kit module contract (kit.js):
//   export async function createPredictor(ctx)
//     ctx = { ort, deploy /* parsed deploy.json */, base /* URL of the folder */,
//             session: async (name) => ort.InferenceSession /* for deploy.models[name], EP/threads set by core */ }
//     returns { predict: async (image /* ImageData RGBA */, options) => object /* exactly to_dict() */,
//               render: (container /* HTMLElement */, image /* ImageData */, result) => void /* draws the picture */,
//               debug?: () => object /* optional: internals of the last predict, for tests */ }
//
// Threads: the wasm backend runs SIMD + threads where the page is cross-origin isolated (COOP/COEP headers),
// one thread otherwise; ?threads=N in the page's URL asks for N.

import * as ort from "./ort/ort.wasm.min.mjs";
import { createPredictor } from "./kit.js";

const base = new URL("./", import.meta.url);
const isolated = globalThis.crossOriginIsolated === true;
const asked = Number(new URL(globalThis.location.href).searchParams.get("threads") || 0);
const threads = isolated ? Math.max(1, asked || Math.min(4, navigator.hardwareConcurrency || 1)) : 1;

ort.env.wasm.wasmPaths = new URL("ort/", base).href;
ort.env.wasm.numThreads = threads;
ort.env.wasm.proxy = false;

const DECODE = { colorSpaceConversion: "none", premultiplyAlpha: "none", imageOrientation: "from-image" };

/** RGBA ImageData of any accepted input, decoded without colour-space conversion or premultiplied alpha. */
export async function toImageData(input) {
  if (typeof ImageData !== "undefined" && input instanceof ImageData) return input;
  let source = input;
  if (typeof input === "string") {
    const response = await fetch(new URL(input, globalThis.location.href));
    if (!response.ok) throw new Error(`cannot fetch ${input}: HTTP ${response.status}`);
    source = await response.blob();
  }
  let bitmap;
  if (source instanceof Blob) {
    bitmap = await createImageBitmap(source, DECODE);
  } else if (typeof HTMLImageElement !== "undefined" && source instanceof HTMLImageElement) {
    if (!source.complete || !source.naturalWidth) await source.decode();
    bitmap = await createImageBitmap(source, DECODE);
  } else if (typeof ImageBitmap !== "undefined" && source instanceof ImageBitmap) {
    bitmap = source;
  } else {
    throw new TypeError("predict takes an image URL string, HTMLImageElement, ImageBitmap, ImageData or Blob");
  }
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const context = canvas.getContext("2d", { willReadFrequently: true, colorSpace: "srgb" });
  context.drawImage(bitmap, 0, 0);
  return context.getImageData(0, 0, bitmap.width, bitmap.height, { colorSpace: "srgb" });
}

let sessionOf = null;

async function load() {
  const response = await fetch(new URL("deploy.json", base));
  if (!response.ok) throw new Error(`cannot load deploy.json: HTTP ${response.status}`);
  const deploy = await response.json();
  const sessions = new Map();
  const session = async (name) => {
    const model = deploy.models[name];
    if (!model) throw new Error(`deploy.json has no model ${name} (it has ${Object.keys(deploy.models)})`);
    if (!sessions.has(name)) {
      sessions.set(name, ort.InferenceSession.create(new URL(model.file, base).href, {
        executionProviders: ["wasm"], graphOptimizationLevel: "all",
        intraOpNumThreads: threads, interOpNumThreads: 1,
      }));
    }
    return sessions.get(name);
  };
  sessionOf = session;
  const kit = await createPredictor({ ort, deploy, base, session });
  await Promise.all(Object.keys(deploy.models).map(session));  // every model loaded before ready resolves
  return { deploy, kit };
}

const loading = load();
const api = {
  ready: loading.then(() => true),
  ort,
  threads,
  crossOriginIsolated: isolated,
  /** The onnxruntime-web session of a model of deploy.json (for benchmarks and scripts). */
  async session(name = "model") {
    await loading;
    return sessionOf(name);
  },
  deploy: null,
  last: null,
  async predict(input, options = {}) {
    const { kit } = await loading;
    const image = await toImageData(input);
    const start = performance.now();
    const result = await kit.predict(image, options);
    const ms = performance.now() - start;
    api.last = { result, ms, image };
    return result;
  },
  debug() {
    return api._kit && api._kit.debug ? api._kit.debug() : null;
  },
  render(container, image, result) {
    if (!api._kit) throw new Error("oarkit is not ready yet: await window.oarkit.ready");
    api._kit.render(container, image, result);
  },
};
loading.then(({ deploy, kit }) => { api.deploy = deploy; api._kit = kit; },
  (error) => { api.error = String(error); console.error(error); });
globalThis.oarkit = api;
export default api;
