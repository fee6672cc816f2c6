// The OCR pipeline in the browser: det -> crop -> (orientation) -> rec on onnxruntime-web, the port of
// ocr/pipeline/glue.py (run_ocr) with ocr/postprocess/ctc.py's greedy decoding. `predict` returns what Python's
// OCRResult.to_dict() gives for the same image; `render` draws it as OCRResult.plot() does (the boxes on the image,
// each text inside the same box on a white panel beside it).
//
// deploy.json (written by oarkit.ocr.web_export) carries, besides the models: `ocr.stages.{det,cls,rec}` (each
// stage's settings as the glue merges them: defaults, deploy.yaml, pipeline.yaml), `ocr.parameters` (drop_score,
// rec_batch_size, cls_batch_size, cls_threshold) and `ocr.dictionary` (the file of the recognizer's classes).

import { dbBoxes, filterBoxes, readingOrder } from "./ocr_db.js";
import { batchTensor, cropBox, detSize, normalizeInto, paddedWidth, resizeLinear, rgbFromImageData }
  from "./ocr_image.js";

const f32 = Math.fround;

/** numpy's float32 mean (pairwise summation in float32, 8 accumulators) of `values`. */
export function float32Mean(values) {
  const n = values.length;
  if (!n) return 0;
  const pairwise = (start, count) => {
    if (count < 8) {
      let s = -0;
      for (let i = 0; i < count; i++) s = f32(s + values[start + i]);
      return s;
    }
    if (count <= 128) {
      const r = [];
      for (let k = 0; k < 8; k++) r.push(values[start + k]);
      let i = 8;
      for (; i < count - (count % 8); i += 8) {
        for (let k = 0; k < 8; k++) r[k] = f32(r[k] + values[start + i + k]);
      }
      let s = f32(f32(f32(r[0] + r[1]) + f32(r[2] + r[3])) + f32(f32(r[4] + r[5]) + f32(r[6] + r[7])));
      for (; i < count; i++) s = f32(s + values[start + i]);
      return s;
    }
    let half = Math.floor(count / 2);
    half -= half % 8;
    return f32(pairwise(start, half) + pairwise(start + half, count - half));
  };
  return f32(pairwise(0, n) / n);
}

/** Greedy CTC decoding of one line's [steps, classes] probabilities (class 0 the blank): its text and score. */
export function ctcGreedy(probs, steps, classes, characters) {
  const kept = [];
  let text = "", prev = -1;
  for (let t = 0; t < steps; t++) {
    let best = 0, conf = probs[t * classes];
    for (let c = 1; c < classes; c++) {
      const v = probs[t * classes + c];
      if (v > conf) { conf = v; best = c; }
    }
    if (best !== prev && best !== 0) {
      kept.push(conf);
      if (best <= characters.length) text += characters[best - 1];
    }
    prev = best;
  }
  return { text, score: kept.length ? float32Mean(kept) : 0 };
}

const round = (value, digits) => {
  // Python's round(x, digits) on the float's value: half to even on the decimal digits
  const factor = 10 ** digits;
  const scaled = value * factor;
  const r = Math.round(scaled);
  const tie = Math.abs(scaled - Math.trunc(scaled)) === 0.5;
  return ((tie && r % 2 !== 0) ? r - 1 : r) / factor;
};

function tensor(ort, data, dims) {
  return new ort.Tensor("float32", data, dims);
}

async function runOne(session, ort, data, dims) {
  const feeds = { [session.inputNames[0]]: tensor(ort, data, dims) };
  const outputs = await session.run(feeds);
  return outputs[session.outputNames[0]];
}

/**
 * The kit module's entry point (see oarkit.js): loads the stages' sessions and the dictionary.
 * @param {{ort: object, deploy: object, base: string, session: (name: string) => Promise<object>}} ctx
 */
export async function createPredictor(ctx) {
  const { ort, deploy, base } = ctx;
  const spec = deploy.ocr;
  if (!spec || !spec.stages || !spec.stages.det || !spec.stages.rec) {
    throw new Error("deploy.json has no `ocr` section with det and rec stages; export the folder again with "
                    + "`oarkit export ocr --format web --out DIR`");
  }
  const ClipperLib = await loadClipper(new URL(spec.clipper || "vendor/clipper.js", base));
  const names = ["det", ...(spec.stages.cls ? ["cls"] : []), "rec"];
  const [sessions, characters] = await Promise.all([
    Promise.all(names.map((n) => ctx.session(n))).then((list) => Object.fromEntries(names.map((n, i) => [n, list[i]]))),
    fetch(new URL(spec.dictionary, base)).then((r) => {
      if (!r.ok) throw new Error(`could not load the dictionary ${spec.dictionary}: HTTP ${r.status}`);
      return r.text();
    }).then((text) => text.split("\n")),
  ]);
  const det = spec.stages.det, rec = spec.stages.rec, cls = spec.stages.cls;
  const params = { drop_score: 0.5, rec_batch_size: 6, cls_batch_size: 6, cls_threshold: 0.9, ...(spec.parameters || {}) };
  if (spec.num_classes && characters.length + 1 !== spec.num_classes) {
    throw new Error(`the dictionary holds ${characters.length} entries but the recognizer ${spec.num_classes - 1} `
                    + "classes besides the blank");
  }

  let timings = {};
  const clock = () => (typeof performance !== "undefined" ? performance.now() : Date.now());

  async function detect(image) {
    let start = clock();
    const [rh, rw] = detSize(image.height, image.width, det.limit_side_len, det.limit_type);
    const resized = resizeLinear(image, rw, rh);
    const input = normalizeInto(resized, det.mean, det.std, det.bgr !== false, new Float32Array(3 * rh * rw));
    timings.det_pre_ms = clock() - start;
    start = clock();
    const prob = await runOne(sessions.det, ort, input, [1, 3, rh, rw]);
    timings.det_model_ms = clock() - start;
    start = clock();
    const [ph, pw] = prob.dims.slice(-2);
    const raw = dbBoxes(prob.data, ph, pw, image.height, image.width, det.db, ClipperLib);
    const kept = filterBoxes(raw.boxes, raw.scores, image.height, image.width);
    timings.db_ms = clock() - start;
    timings.det_size = [rh, rw];
    return kept;
  }

  async function classify(crops) {
    const out = crops.slice();
    const h = cls.height, w = cls.width;
    for (let start = 0; start < crops.length; start += params.cls_batch_size) {
      const chunk = crops.slice(start, start + params.cls_batch_size);
      const probs = await runOne(sessions.cls, ort, batchTensor(chunk, h, w, cls.mean, cls.std, cls.bgr !== false),
                                 [chunk.length, 3, h, w]);
      const k = probs.dims[1];
      chunk.forEach((crop, i) => {
        const p = probs.data.subarray(i * k, (i + 1) * k);
        let best = 0;
        for (let c = 1; c < k; c++) if (p[c] > p[best]) best = c;
        if (best === 1 && p[1] >= params.cls_threshold) out[start + i] = rotate180(crop);
      });
    }
    return out;
  }

  async function recognize(crops) {
    const height = rec.height, minWidth = rec.width;
    const order = crops.map((_, i) => i).sort((a, b) => crops[a].width / Math.max(crops[a].height, 1)
      - crops[b].width / Math.max(crops[b].height, 1) || a - b);
    const results = new Array(crops.length).fill(null).map(() => ({ text: "", score: 0 }));
    for (let start = 0; start < order.length; start += params.rec_batch_size) {
      const idx = order.slice(start, start + params.rec_batch_size);
      const chunk = idx.map((i) => crops[i]);
      const width = paddedWidth(chunk, height, minWidth);
      let t0 = clock();
      const batch = batchTensor(chunk, height, width, rec.mean, rec.std, rec.bgr !== false);
      timings.rec_pre_ms += clock() - t0;
      t0 = clock();
      const probs = await runOne(sessions.rec, ort, batch, [chunk.length, 3, height, width]);
      timings.rec_model_ms += clock() - t0;
      const [, steps, classes] = probs.dims;
      if (classes !== characters.length + 1) {
        throw new Error(`the recognizer outputs ${classes} classes but the dictionary has ${characters.length + 1}`);
      }
      idx.forEach((i, k) => {
        results[i] = ctcGreedy(probs.data.subarray(k * steps * classes, (k + 1) * steps * classes), steps, classes,
                               characters);
      });
    }
    return results;
  }

  /** OCR of one image; options: `drop_score` (lines the recognizer scores under it are left out), as OCR()'s. */
  async function predict(imageData, options = {}) {
    const dropScore = options.drop_score ?? params.drop_score;
    timings = { rec_pre_ms: 0, rec_model_ms: 0 };
    const image = rgbFromImageData(imageData);
    const found = await detect(image);
    const order = readingOrder(found.boxes);
    const boxes = order.map((i) => found.boxes[i]), boxScores = order.map((i) => found.scores[i]);
    const start = clock();
    let crops = boxes.map((b) => cropBox(image, b));
    timings.crops_ms = clock() - start;
    if (cls && crops.length) crops = await classify(crops);
    const texts = crops.length ? await recognize(crops) : [];
    const lines = [];
    boxes.forEach((box, i) => {
      const { text, score } = texts[i];
      if (score >= dropScore && text) {
        lines.push({ box: box.map(([x, y]) => [round(x, 1), round(y, 1)]), text, score: round(score, 5),
                     box_score: round(boxScores[i], 5) });
      }
    });
    return { source: null, text: lines.map((l) => l.text).join("\n"), lines };
  }

  // the last predict's time per step (pre-processing, each model, DB post-processing, crops), for benchmarks
  const debug = () => ({ ...timings });
  return { predict, render, debug };
}

/** clipper-lib (a classic script that sets globalThis.ClipperLib): loaded once, by a script element in a page or
 * importScripts in a worker. */
async function loadClipper(url) {
  if (globalThis.ClipperLib) return globalThis.ClipperLib;
  if (typeof document !== "undefined") {
    await new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url.href;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load clipper-lib from ${url.href}`));
      document.head.appendChild(script);
    });
  } else if (typeof importScripts === "function") {
    importScripts(url.href);
  }
  if (!globalThis.ClipperLib) throw new Error(`${url.href} did not define ClipperLib`);
  return globalThis.ClipperLib;
}

function rotate180(image) {
  const { data, width, height } = image;
  const out = new Uint8Array(data.length);
  const n = width * height;
  for (let i = 0; i < n; i++) {
    const j = n - 1 - i;
    out[j * 3] = data[i * 3]; out[j * 3 + 1] = data[i * 3 + 1]; out[j * 3 + 2] = data[i * 3 + 2];
  }
  return { data: out, width, height };
}

function hsvToRgb(h, s, v) {
  const i = Math.floor(h * 6), f = h * 6 - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  const [r, g, b] = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][i % 6];
  return [r, g, b].map((c) => Math.round(255 * c));
}

/** The result drawn as Python's OCRResult.plot(): the image with each line's box in a colour of its own, beside a
 * white panel writing each text inside the same box, and the lines listed with their scores. */
export function render(container, image, result) {
  const w = image.width, h = image.height;
  const canvas = document.createElement("canvas");
  canvas.width = 2 * w + 8;
  canvas.height = h;
  canvas.className = "oarkit-ocr";
  canvas.style.maxWidth = "100%";
  const g = canvas.getContext("2d");
  g.fillStyle = "rgb(235,235,235)";
  g.fillRect(0, 0, canvas.width, h);
  g.putImageData(image, 0, 0);
  g.fillStyle = "#fff";
  g.fillRect(w + 8, 0, w, h);
  const path = (box, dx) => {
    g.beginPath();
    box.forEach(([x, y], k) => (k ? g.lineTo(x + dx, y) : g.moveTo(x + dx, y)));
    g.closePath();
  };
  result.lines.forEach((line, i) => {
    const [r, gr, b] = hsvToRgb((i * 0.618) % 1, 0.8, 0.9);
    path(line.box, 0);
    g.fillStyle = `rgba(${r},${gr},${b},0.27)`;
    g.fill();
    g.lineWidth = 2;
    g.strokeStyle = `rgb(${r},${gr},${b})`;
    g.stroke();
    path(line.box, w + 8);
    g.lineWidth = 1;
    g.stroke();
    const [p0, p1, , p3] = line.box;
    const boxH = Math.max(Math.hypot(p0[0] - p3[0], p0[1] - p3[1]), 8);
    const boxW = Math.max(Math.hypot(p0[0] - p1[0], p0[1] - p1[1]), 8);
    let size = Math.max(8, Math.floor(boxH * 0.8));
    const font = (s) => `${s}px "Noto Sans CJK SC", "Noto Sans", "DejaVu Sans", sans-serif`;
    g.font = font(size);
    while (size > 8 && g.measureText(line.text).width > boxW * 1.1) g.font = font(--size);
    g.fillStyle = "#000";
    g.textBaseline = "middle";
    g.save();
    g.translate(w + 8 + p0[0], p0[1]);
    g.rotate(Math.atan2(p1[1] - p0[1], p1[0] - p0[0]));
    g.fillText(line.text, 2, boxH / 2);
    g.restore();
  });
  const list = document.createElement("ol");
  list.className = "oarkit-ocr-lines";
  for (const line of result.lines) {
    const item = document.createElement("li");
    item.textContent = `${line.text}  (${line.score.toFixed(3)})`;
    list.appendChild(item);
  }
  container.replaceChildren(canvas, list);
}
