// oarkit seg in the browser: the Segmenter's preprocessing (optional resize as cv2, normalise), its inference
// modes (whole image or sliding windows, scales and flip averaged as probabilities, a fixed-size model seeing each
// view resized to its size as torch's bilinear F.interpolate does), the argmax class map with per-class pixels,
// fraction and mean probability, and its picture (image, colour overlay, legend). See oarkit.js for the contract.

import { canvasOf, normalize, resize, resizeCHW, rgbOf, roundTo } from "./imageops.js";

const f32 = Math.fround;

/** PaddleSeg's (Pascal VOC's) pseudo-colour palette, as seg/data/labels.py color_map. */
export function colorMap(n) {
  const palette = [];
  for (let i = 0; i < n; i++) {
    let c = i;
    const lab = [0, 0, 0];
    for (let j = 0; j < 8; j++) {
      for (let k = 0; k < 3; k++) lab[k] |= ((c >> k) & 1) << (7 - j);
      c >>= 3;
    }
    palette.push(lab);
  }
  return palette;
}

function flipW(data, c, h, w) {
  const out = new Float32Array(data.length);
  for (let k = 0; k < c; k++) {
    for (let y = 0; y < h; y++) {
      const row = (k * h + y) * w;
      for (let x = 0; x < w; x++) out[row + x] = data[row + w - 1 - x];
    }
  }
  return out;
}

function window(data, c, h, w, y1, y2, x1, x2) {
  const wh = y2 - y1, ww = x2 - x1, out = new Float32Array(c * wh * ww);
  for (let k = 0; k < c; k++) {
    for (let y = 0; y < wh; y++) out.set(data.subarray((k * h + y1 + y) * w + x1, (k * h + y1 + y) * w + x2), (k * wh + y) * ww);
  }
  return out;
}

export async function createPredictor(ctx) {
  const model = ctx.deploy.models.model;
  const spec = model.preprocessing;
  const post = model.postprocessing || {};
  const config = { mode: "whole", scales: [1.0], flip: false, ...(post.inference || {}) };
  const labels = model.labels || [];
  const session = await ctx.session("model");
  const inputName = session.inputNames[0], outputName = session.outputNames[0];
  const shape = (model.inputs && model.inputs[0] && model.inputs[0].shape) || [];
  const fixed = shape.length === 4 && Number.isInteger(shape[2]) && Number.isInteger(shape[3]) ? [shape[2], shape[3]] : null;
  let last = null;

  async function forward(data, h, w) {  // logits C x h x w of one normalised view (seg/inference.py run_model)
    let input = data, ih = h, iw = w;
    if (fixed && (fixed[0] !== h || fixed[1] !== w)) {
      input = resizeCHW(data, 3, h, w, fixed[0], fixed[1]); [ih, iw] = fixed;
    }
    const out = (await session.run({ [inputName]: new ctx.ort.Tensor("float32", input, [1, 3, ih, iw]) }))[outputName];
    const [, c, oh, ow] = out.dims;
    return { data: resizeCHW(out.data, c, oh, ow, h, w), c };
  }

  async function single(data, h, w) {
    if (config.mode !== "slide") return forward(data, h, w);
    const ch = Math.min(config.crop_size[0], h), cw = Math.min(config.crop_size[1], w);
    const [sh, sw] = config.stride || [Math.max(1, Math.floor(config.crop_size[0] * 2 / 3)),
      Math.max(1, Math.floor(config.crop_size[1] * 2 / 3))];
    const rows = Math.max(Math.ceil((h - ch) / sh), 0) + 1, cols = Math.max(Math.ceil((w - cw) / sw), 0) + 1;
    let total = null, c = 0;
    const count = new Float32Array(h * w);
    for (let r = 0; r < rows; r++) {
      for (let q = 0; q < cols; q++) {
        const y2 = Math.min(r * sh + ch, h), x2 = Math.min(q * sw + cw, w);
        const y1 = Math.max(y2 - ch, 0), x1 = Math.max(x2 - cw, 0);
        const part = await forward(window(data, 3, h, w, y1, y2, x1, x2), y2 - y1, x2 - x1);
        c = part.c;
        if (!total) total = new Float32Array(c * h * w);
        const ph = y2 - y1, pw = x2 - x1;
        for (let k = 0; k < c; k++) {
          for (let y = 0; y < ph; y++) {
            for (let x = 0; x < pw; x++) total[(k * h + y1 + y) * w + x1 + x] += part.data[(k * ph + y) * pw + x];
          }
        }
        for (let y = y1; y < y2; y++) for (let x = x1; x < x2; x++) count[y * w + x] += 1;
      }
    }
    for (let k = 0; k < c; k++) for (let i = 0; i < h * w; i++) total[k * h * w + i] /= count[i];
    return { data: total, c };
  }

  async function infer(data, h, w) {  // seg/inference.py infer: logits C x h x w
    const augmented = config.flip || config.scales.length !== 1 || config.scales[0] !== 1;
    if (!augmented) return single(data, h, w);
    let probs = null, c = 0;
    for (const scale of config.scales) {
      const sh = Math.max(1, roundTo(h * scale, 0)), sw = Math.max(1, roundTo(w * scale, 0));
      const scaled = scale === 1 ? data : resizeCHW(data, 3, h, w, sh, sw);
      const views = config.flip ? [scaled, flipW(scaled, 3, sh, sw)] : [scaled];
      for (let v = 0; v < views.length; v++) {
        let logits = await single(views[v], sh, sw);
        c = logits.c;
        let values = logits.data;
        if (v === 1) values = flipW(values, c, sh, sw);
        values = resizeCHW(values, c, sh, sw, h, w);
        if (!probs) probs = new Float32Array(c * h * w);
        const plane = h * w;
        for (let i = 0; i < plane; i++) {
          let max = -Infinity;
          for (let k = 0; k < c; k++) max = Math.max(max, values[k * plane + i]);
          let sum = 0;
          for (let k = 0; k < c; k++) sum += Math.exp(values[k * plane + i] - max);
          for (let k = 0; k < c; k++) probs[k * plane + i] += f32(Math.exp(values[k * plane + i] - max) / sum);
        }
      }
    }
    const n = config.scales.length * (config.flip ? 2 : 1);
    for (let i = 0; i < probs.length; i++) probs[i] = Math.log(Math.max(f32(probs[i] / n), 1e-12));
    return { data: probs, c };
  }

  async function predict(imageData) {
    let img = rgbOf(imageData);
    const height = img.height, width = img.width;
    if (spec.resize) img = resize(img, spec.resize[1], spec.resize[0], "linear");
    const logits = await infer(normalize(img, spec.mean, spec.std, "scale"), img.height, img.width);
    const c = logits.c;
    const values = resizeCHW(logits.data, c, img.height, img.width, height, width);
    const plane = height * width, mask = new Uint16Array(plane);
    const pixels = new Array(c).fill(0), scoreSums = new Array(c).fill(0);
    for (let i = 0; i < plane; i++) {
      let max = -Infinity, arg = 0;
      for (let k = 0; k < c; k++) { const v = values[k * plane + i]; if (v > max) { max = v; arg = k; } }
      let sum = 0;
      for (let k = 0; k < c; k++) sum += Math.exp(values[k * plane + i] - max);
      mask[i] = arg; pixels[arg] += 1; scoreSums[arg] += f32(1 / sum);
    }
    const name = (k) => (k < labels.length ? labels[k] : String(k));
    const classes = pixels.map((n, k) => [n, k]).filter(([n]) => n > 0).sort((a, b) => b[0] - a[0] || a[1] - b[1])
      .map(([n, k]) => ({ class_id: k, label: name(k), pixels: n, fraction: roundTo(n / plane, 6),
        mean_score: roundTo(f32(scoreSums[k] / n), 6) }));
    last = { mask, size: [height, width], classes: c };
    return { source: null, size: [height, width], classes };
  }

  function render(container, imageData, result) {
    const numClasses = Math.max(labels.length, last ? last.classes : 0);
    const palette = colorMap(Math.max(numClasses, 1));
    const overlay = new ImageData(imageData.width, imageData.height);
    const mask = last && last.size[0] === imageData.height && last.size[1] === imageData.width ? last.mask : null;
    for (let i = 0; i < imageData.width * imageData.height; i++) {
      const colour = palette[mask ? mask[i] : 0];
      for (let k = 0; k < 3; k++) overlay.data[4 * i + k] = Math.floor(imageData.data[4 * i + k] * 0.5 + colour[k] * 0.5);
      overlay.data[4 * i + 3] = 255;
    }
    const side = Math.max(imageData.width, imageData.height);
    const shown = Math.min(480, side < 320 ? imageData.width * Math.floor(320 / side) : imageData.width);
    const row = document.createElement("div");
    row.style.display = "flex"; row.style.gap = "1rem"; row.style.flexWrap = "wrap";
    for (const [canvas, caption] of [[canvasOf(imageData), "image"], [canvasOf(overlay), "prediction"]]) {
      const figure = document.createElement("figure");
      figure.style.margin = "0";
      canvas.style.width = `${shown}px`;
      const text = document.createElement("figcaption");
      text.textContent = caption; text.style.fontSize = ".85rem"; text.style.color = "#66707a";
      figure.append(canvas, text);
      row.append(figure);
    }
    const legend = document.createElement("div");
    legend.className = "legend";
    for (const entry of result.classes.slice(0, 20)) {
      const item = document.createElement("span");
      const swatch = document.createElement("i");
      swatch.style.background = `rgb(${palette[entry.class_id].join(",")})`;
      item.append(swatch, `${entry.label} (${(100 * entry.fraction).toFixed(1)}%)`);
      legend.append(item);
    }
    if (result.classes.length > 20) legend.append(`+${result.classes.length - 20} smaller`);
    const column = document.createElement("div");
    column.className = "panel";
    column.append(row, legend);
    container.append(column);
  }

  return { predict, render, debug: () => (last ? { mask: Array.from(last.mask), size: last.size } : null) };
}
