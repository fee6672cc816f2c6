// oarkit clas in the browser: the Classifier's preprocessing (short-side resize as cv2, centre crop, normalise),
// softmax and top-k, and its picture (the image beside bars of the top-k scores). See oarkit.js for the contract.

import { centerCrop, normalize, resize, rgbOf, roundTo, softmax, canvasOf } from "./imageops.js";

const f32 = Math.fround;

export async function createPredictor(ctx) {
  const model = ctx.deploy.models.model;
  const spec = model.preprocessing;
  const labels = model.labels || [];
  const session = await ctx.session("model");
  const inputName = session.inputNames[0];
  const defaultTopk = ctx.deploy.topk || 5;

  function preprocess(imageData) {
    let img = rgbOf(imageData);
    const scale = spec.resize_short / Math.min(img.height, img.width);
    // Python's round() (half to even), as albumentations' SmallestMaxSize
    const newH = Math.max(1, roundTo(img.height * scale, 0)), newW = Math.max(1, roundTo(img.width * scale, 0));
    img = resize(img, newW, newH, spec.interpolation);
    const [ch, cw] = spec.crop;
    img = centerCrop(img, ch, cw);
    return new ctx.ort.Tensor("float32", normalize(img, spec.mean, spec.std, "scale"), [1, 3, ch, cw]);
  }

  async function predict(imageData, options = {}) {
    const outputs = await session.run({ [inputName]: preprocess(imageData) });
    const logits = outputs[session.outputNames[0]].data;
    const probs = softmax(Array.from(logits, f32));
    const k = Math.min(options.topk || defaultTopk, probs.length);
    const order = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]).slice(0, k);
    const name = (i) => (i < labels.length ? labels[i] : String(i));
    const topk = order.map(([p, i]) => ({ class_id: i, label: name(i), score: p }));
    return { source: null, label: topk[0].label, score: topk[0].score, topk };
  }

  function render(container, imageData, result) {
    const picture = canvasOf(imageData);
    const side = Math.max(imageData.width, imageData.height);
    const zoom = side < 256 ? Math.floor(256 / side) : 1;  // small images drawn larger, pixels kept sharp
    picture.style.width = `${Math.min(480, imageData.width * zoom)}px`;
    const panel = document.createElement("div");
    panel.className = "panel";
    const head = document.createElement("h2");
    head.textContent = `${result.label}: ${(100 * result.score).toFixed(1)}%`;
    panel.append(head);
    result.topk.forEach((entry, i) => {
      const bar = document.createElement("div");
      bar.className = i === 0 ? "bar top" : "bar";
      bar.innerHTML = '<span class="name"></span><span class="track"><span class="fill"></span></span>' +
        '<span class="value"></span>';
      bar.querySelector(".name").textContent = `${entry.label} (${entry.class_id})`;
      bar.querySelector(".name").title = entry.label;
      bar.querySelector(".fill").style.width = `${(100 * entry.score).toFixed(2)}%`;
      bar.querySelector(".fill").style.display = "block";
      bar.querySelector(".value").textContent = `${(100 * entry.score).toFixed(1)}%`;
      panel.append(bar);
    });
    container.append(picture, panel);
  }

  return { predict, render };
}
