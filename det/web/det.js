// oarkit det in the browser: the Detector's preprocessing (resize to the model's size as cv2 does on float32
// pixels, normalise), the detections the graph's NMS returns above the score threshold, boxes scaled back to the
// image's pixels and clipped, and its picture (labelled boxes, one colour per class). See oarkit.js for the contract.

import { normalize, resize, rgbOf, roundTo, toFloat } from "./imageops.js";

const f32 = Math.fround;

/** A bright colour per class, spread around the hue circle by the golden ratio (det/visualize.py class_color). */
export function classColor(classId) {
  const h = (classId * 0.618033988749895) % 1.0, s = 0.85, v = 0.95;
  const i = Math.floor(h * 6), f = h * 6 - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  const [r, g, b] = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][i % 6];
  return [Math.floor(r * 255), Math.floor(g * 255), Math.floor(b * 255)];
}

const number = (x) => (typeof x === "bigint" ? Number(x) : x);

export async function createPredictor(ctx) {
  const model = ctx.deploy.models.model;
  const spec = model.preprocessing;
  const labels = model.labels || [];
  const session = await ctx.session("model");
  const inputName = session.inputNames[0];
  const defaultThreshold = ctx.deploy.threshold ?? 0.5;

  async function predict(imageData, options = {}) {
    const threshold = options.threshold ?? defaultThreshold;
    const rgb = rgbOf(imageData);
    const [th, tw] = spec.size;
    const sized = resize(toFloat(rgb), tw, th, spec.interpolation || "linear");
    const input = new ctx.ort.Tensor("float32", normalize(sized, spec.mean, spec.std, "divide"), [1, 3, th, tw]);
    const out = await session.run({ [inputName]: input });
    const [boxes, scores, classes, num] = session.outputNames.map((name) => out[name].data);
    const count = number(num[0]);
    const sx = f32(tw / rgb.width), sy = f32(th / rgb.height);
    const clip = (v, hi) => Math.min(Math.max(v, 0), hi);
    const detections = [];
    for (let i = 0; i < count; i++) {
      const score = scores[i];
      if (!(score >= f32(threshold))) continue;
      const b = boxes.subarray(4 * i, 4 * i + 4);
      const box = [clip(f32(b[0] / sx), rgb.width), clip(f32(b[1] / sy), rgb.height),
        clip(f32(b[2] / sx), rgb.width), clip(f32(b[3] / sy), rgb.height)];
      const classId = number(classes[i]);
      detections.push({ box: box.map((v) => roundTo(v, 2)), score: roundTo(score, 4), class_id: classId,
        label: classId >= 0 && classId < labels.length ? labels[classId] : String(classId) });
    }
    return { source: null, size: [rgb.height, rgb.width], detections };
  }

  function render(container, imageData, result) {
    // Drawn at display size (at least 480 px on the long side) so that captions stay readable on small images.
    const side = Math.max(imageData.width, imageData.height);
    const zoom = Math.max(1, Math.min(8, 480 / side));
    const canvas = document.createElement("canvas");
    canvas.width = Math.round(imageData.width * zoom); canvas.height = Math.round(imageData.height * zoom);
    const g = canvas.getContext("2d");
    const source = document.createElement("canvas");
    source.width = imageData.width; source.height = imageData.height;
    source.getContext("2d").putImageData(imageData, 0, 0);
    g.imageSmoothingEnabled = zoom < 2;
    g.drawImage(source, 0, 0, canvas.width, canvas.height);
    const thickness = Math.max(2, Math.round(Math.min(canvas.width, canvas.height) / 300));
    const font = Math.max(12, Math.round(Math.min(canvas.width, canvas.height) / 40));
    g.font = `${font}px "DejaVu Sans", sans-serif`;
    g.textBaseline = "top";
    for (const d of [...result.detections].sort((a, b) => a.score - b.score)) {  // the best drawn last, on top
      const colour = `rgb(${classColor(d.class_id).join(",")})`;
      const [x1, y1, x2, y2] = d.box.map((v) => v * zoom);
      g.lineWidth = thickness; g.strokeStyle = colour;
      g.strokeRect(x1, y1, x2 - x1, y2 - y1);
      const text = `${d.label} ${d.score.toFixed(2)}`;
      const tw = g.measureText(text).width + 6, th = font + 4;
      const top = y1 - th >= 0 ? y1 - th : y1;
      g.fillStyle = colour; g.fillRect(x1 - thickness / 2, top, tw, th);
      g.fillStyle = "#000"; g.fillText(text, x1 + 3 - thickness / 2, top + 2);
    }
    canvas.style.maxWidth = "100%";
    const panel = document.createElement("div");
    panel.className = "panel";
    const head = document.createElement("h2");
    head.textContent = `${result.detections.length} detection${result.detections.length === 1 ? "" : "s"}`;
    const list = document.createElement("div");
    list.className = "legend";
    const counts = new Map();
    for (const d of result.detections) counts.set(d.class_id, [d.label, (counts.get(d.class_id)?.[1] || 0) + 1]);
    for (const [classId, [label, n]] of counts) {
      const item = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = `rgb(${classColor(classId).join(",")})`;
      item.append(swatch, `${label} × ${n}`);
      list.append(item);
    }
    panel.append(head, list);
    container.append(canvas, panel);
  }

  return { predict, render };
}
