// oarkit web: image operations the kits' modules share, written to give the numbers the Python predictors get.
//
// An image here is {data, width, height, channels} in HWC order: data a Uint8Array (pixels as decoded) or a
// Float32Array. The resizes reproduce OpenCV's cv2.resize (half-pixel centres, replicated borders; INTER_LINEAR on
// uint8 in OpenCV's 11-bit fixed point, an exact 2x shrink by INTER_AREA as OpenCV switches to), because canvas
// scaling filters differently. resizeCHW reproduces torch's F.interpolate(mode="bilinear", align_corners=False).

const f32 = Math.fround;
const COEF_BITS = 11;
const COEF_SCALE = 1 << COEF_BITS;

/** Round half to even, as OpenCV's cvRound (lrint) does. */
export function rint(x) {
  const r = Math.round(x);
  return (Math.abs(x % 1) === 0.5 && r % 2 !== 0) ? r - 1 : r;
}

/** RGB uint8 image of an RGBA ImageData (alpha dropped, as PIL's convert("RGB") does). */
export function rgbOf(imageData) {
  const { width, height, data } = imageData;
  const out = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < data.length; i += 4, j += 3) {
    out[j] = data[i]; out[j + 1] = data[i + 1]; out[j + 2] = data[i + 2];
  }
  return { data: out, width, height, channels: 3 };
}

/** RGBA ImageData of an RGB uint8 image (for drawing). */
export function imageDataOf(img) {
  const out = new ImageData(img.width, img.height);
  for (let i = 0, j = 0; j < img.data.length; i += 4, j += 3) {
    out.data[i] = img.data[j]; out.data[i + 1] = img.data[j + 1]; out.data[i + 2] = img.data[j + 2];
    out.data[i + 3] = 255;
  }
  return out;
}

/** A uint8 image as float32 (values kept, 0..255). */
export function toFloat(img) {
  return { ...img, data: Float32Array.from(img.data) };
}

// Per destination index: source index, its neighbour and the weight of the neighbour (cv2's linear tables). Along
// x OpenCV moves a position past the border onto it (weight 0); along y it keeps the weight and replicates rows.
function linearTable(src, dst, clampWeight = true) {
  const scale = src / dst;
  const idx = new Int32Array(dst), next = new Int32Array(dst), frac = new Float32Array(dst);
  for (let d = 0; d < dst; d++) {
    let fx = f32((d + 0.5) * scale - 0.5);
    let sx = Math.floor(fx);
    fx = f32(fx - sx);
    if (clampWeight && sx < 0) { fx = 0; sx = 0; }
    if (clampWeight && sx >= src - 1) { fx = 0; sx = src - 1; }
    idx[d] = Math.min(Math.max(sx, 0), src - 1); next[d] = Math.min(Math.max(sx + 1, 0), src - 1); frac[d] = fx;
  }
  return { idx, next, frac };
}

function resizeLinearU8(img, dw, dh) {
  const { width: w, height: h, channels: cn, data } = img;
  const tx = linearTable(w, dw), ty = linearTable(h, dh, false);
  const a0 = new Int32Array(dw), a1 = new Int32Array(dw);
  for (let d = 0; d < dw; d++) {
    a0[d] = rint(f32(1 - tx.frac[d]) * COEF_SCALE); a1[d] = rint(tx.frac[d] * COEF_SCALE);
  }
  const rowLen = dw * cn;
  const hrow = (sy) => {  // horizontal pass of one source row: int32, scaled by 2048
    const out = new Int32Array(rowLen);
    const base = sy * w * cn;
    for (let d = 0; d < dw; d++) {
      const s0 = base + tx.idx[d] * cn, s1 = base + tx.next[d] * cn;
      for (let c = 0; c < cn; c++) out[d * cn + c] = data[s0 + c] * a0[d] + data[s1 + c] * a1[d];
    }
    return out;
  };
  const cache = new Map();
  const row = (sy) => {
    if (!cache.has(sy)) { if (cache.size > 4) cache.clear(); cache.set(sy, hrow(sy)); }
    return cache.get(sy);
  };
  const out = new Uint8Array(dh * rowLen);
  // OpenCV's SIMD vertical pass, which covers every byte of a row (its last vector overlaps the one before):
  // ((r0 >> 4) * b0 >> 16) + ((r1 >> 4) * b1 >> 16) + 2 >> 2.
  for (let y = 0; y < dh; y++) {
    const b0 = rint(f32(1 - ty.frac[y]) * COEF_SCALE), b1 = rint(ty.frac[y] * COEF_SCALE);
    const r0 = row(ty.idx[y]), r1 = row(ty.next[y]);
    const o = y * rowLen;
    for (let x = 0; x < rowLen; x++) {
      const v = (Math.floor((r0[x] >> 4) * b0 / 65536) + Math.floor((r1[x] >> 4) * b1 / 65536) + 2) >> 2;
      out[o + x] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
  }
  return { data: out, width: dw, height: dh, channels: cn };
}

function resizeLinearF32(img, dw, dh) {
  const { width: w, height: h, channels: cn, data } = img;
  const tx = linearTable(w, dw), ty = linearTable(h, dh, false);
  const out = new Float32Array(dw * dh * cn);
  const tmp0 = new Float32Array(dw * cn), tmp1 = new Float32Array(dw * cn);
  const hrow = (sy, dst) => {
    const base = sy * w * cn;
    for (let d = 0; d < dw; d++) {
      const fx = tx.frac[d], gx = f32(1 - fx);
      const s0 = base + tx.idx[d] * cn, s1 = base + tx.next[d] * cn;
      for (let c = 0; c < cn; c++) dst[d * cn + c] = f32(f32(data[s0 + c] * gx) + f32(data[s1 + c] * fx));
    }
  };
  for (let y = 0; y < dh; y++) {
    hrow(ty.idx[y], tmp0); hrow(ty.next[y], tmp1);
    const fy = ty.frac[y], gy = f32(1 - fy), o = y * dw * cn;
    for (let x = 0; x < dw * cn; x++) out[o + x] = f32(tmp0[x] * gy) + f32(tmp1[x] * fy);
  }
  return { data: out, width: dw, height: dh, channels: cn };
}

function cubicWeights(x) {
  const A = -0.75;
  const c0 = f32(((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A);
  const c1 = f32(((A + 2) * x - (A + 3)) * x * x + 1);
  const c2 = f32(((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1);
  return [c0, c1, c2, f32(1 - c0 - c1 - c2)];
}

function cubicTable(src, dst) {
  const scale = src / dst;
  const idx = new Int32Array(dst * 4), wts = new Float32Array(dst * 4);
  for (let d = 0; d < dst; d++) {
    let fx = f32((d + 0.5) * scale - 0.5);
    const sx = Math.floor(fx);
    fx = f32(fx - sx);
    const c = cubicWeights(fx);
    for (let k = 0; k < 4; k++) {
      idx[d * 4 + k] = Math.min(Math.max(sx + k - 1, 0), src - 1);
      wts[d * 4 + k] = c[k];
    }
  }
  return { idx, wts };
}

function resizeCubic(img, dw, dh) {
  const { width: w, height: h, channels: cn, data } = img;
  const tx = cubicTable(w, dw), ty = cubicTable(h, dh);
  const rows = new Map();
  const hrow = (sy) => {
    if (rows.has(sy)) return rows.get(sy);
    const out = new Float32Array(dw * cn), base = sy * w * cn;
    for (let d = 0; d < dw; d++) {
      for (let c = 0; c < cn; c++) {
        let v = 0;
        for (let k = 0; k < 4; k++) v += data[base + tx.idx[d * 4 + k] * cn + c] * tx.wts[d * 4 + k];
        out[d * cn + c] = v;
      }
    }
    if (rows.size > 8) rows.clear();
    rows.set(sy, out);
    return out;
  };
  const u8 = data instanceof Uint8Array;
  const out = u8 ? new Uint8Array(dw * dh * cn) : new Float32Array(dw * dh * cn);
  for (let y = 0; y < dh; y++) {
    const r = [0, 1, 2, 3].map((k) => hrow(ty.idx[y * 4 + k]));
    const wy = ty.wts.subarray(y * 4, y * 4 + 4), o = y * dw * cn;
    for (let x = 0; x < dw * cn; x++) {
      const v = r[0][x] * wy[0] + r[1][x] * wy[1] + r[2][x] * wy[2] + r[3][x] * wy[3];
      out[o + x] = u8 ? Math.min(255, Math.max(0, rint(v))) : v;
    }
  }
  return { data: out, width: dw, height: dh, channels: cn };
}

function resizeNearest(img, dw, dh) {
  const { width: w, height: h, channels: cn, data } = img;
  const out = new data.constructor(dw * dh * cn);
  const sx = Int32Array.from({ length: dw }, (_, d) => Math.min(Math.floor(d * (w / dw)), w - 1));
  for (let y = 0; y < dh; y++) {
    const sy = Math.min(Math.floor(y * (h / dh)), h - 1);
    for (let x = 0; x < dw; x++) {
      for (let c = 0; c < cn; c++) out[(y * dw + x) * cn + c] = data[(sy * w + sx[x]) * cn + c];
    }
  }
  return { data: out, width: dw, height: dh, channels: cn };
}

function shrinkArea(img, fx, fy) {  // integer factors: the mean of each fx x fy block, as cv2's fast INTER_AREA
  const { width: w, channels: cn, data } = img;
  const dw = Math.floor(img.width / fx), dh = Math.floor(img.height / fy);
  const u8 = data instanceof Uint8Array, n = fx * fy;
  const out = u8 ? new Uint8Array(dw * dh * cn) : new Float32Array(dw * dh * cn);
  for (let y = 0; y < dh; y++) {
    for (let x = 0; x < dw; x++) {
      for (let c = 0; c < cn; c++) {
        let s = 0;
        for (let j = 0; j < fy; j++) for (let i = 0; i < fx; i++) s += data[((y * fy + j) * w + x * fx + i) * cn + c];
        out[(y * dw + x) * cn + c] = u8 ? Math.floor((s + (n >> 1)) / n) : f32(s / n);
      }
    }
  }
  return { data: out, width: dw, height: dh, channels: cn };
}

/**
 * cv2.resize(img, (dw, dh), interpolation): "linear"/"bilinear", "cubic"/"bicubic", "nearest", or "area" (integer
 * shrink factors only). Uint8 cubic is computed in float and rounded (OpenCV's fixed point may differ by one).
 */
export function resize(img, dw, dh, interpolation = "linear") {
  if (dw === img.width && dh === img.height) return img;
  const scaleX = img.width / dw, scaleY = img.height / dh;
  const integral = Number.isInteger(scaleX) && Number.isInteger(scaleY);
  const mode = { bilinear: "linear", bicubic: "cubic" }[interpolation] || interpolation;
  if ((mode === "linear" && integral && scaleX === 2 && scaleY === 2) || (mode === "area" && integral)) {
    return shrinkArea(img, scaleX, scaleY);
  }
  if (mode === "linear") return img.data instanceof Uint8Array ? resizeLinearU8(img, dw, dh) : resizeLinearF32(img, dw, dh);
  if (mode === "cubic") return resizeCubic(img, dw, dh);
  if (mode === "nearest") return resizeNearest(img, dw, dh);
  throw new Error(`interpolation ${interpolation} is not supported in the browser (linear, cubic, nearest, area)`);
}

/** The centre crop of an HWC image (top/left as Python's (size - crop) // 2). */
export function centerCrop(img, ch, cw) {
  const top = Math.floor((img.height - ch) / 2), left = Math.floor((img.width - cw) / 2);
  const cn = img.channels, out = new img.data.constructor(ch * cw * cn);
  for (let y = 0; y < ch; y++) {
    const s = ((top + y) * img.width + left) * cn;
    out.set(img.data.subarray(s, s + cw * cn), y * cw * cn);
  }
  return { data: out, width: cw, height: ch, channels: cn };
}

/**
 * CHW float32 of an HWC image, normalised with mean/std given for [0, 1] pixels: "scale" computes
 * (x - 255 mean) * (1 / (255 std)) (the clas and seg predictors), "divide" (x / 255 - mean) / std (det).
 */
export function normalize(img, mean, std, how = "scale") {
  const { width: w, height: h, channels: cn, data } = img;
  const plane = w * h, out = new Float32Array(plane * cn);
  for (let c = 0; c < cn; c++) {
    const m255 = f32(f32(mean[c]) * 255), inv = f32(1 / f32(f32(std[c]) * 255));
    const m = f32(mean[c]), s = f32(std[c]);
    for (let i = 0; i < plane; i++) {
      const x = data[i * cn + c];
      out[c * plane + i] = how === "scale" ? f32(f32(x - m255) * inv) : f32(f32(f32(x / 255) - m) / s);
    }
  }
  return out;
}

/** torch's F.interpolate(x, size=(dh, dw), mode="bilinear", align_corners=False) of a C x H x W float32 array. */
export function resizeCHW(data, c, h, w, dh, dw) {
  if (dh === h && dw === w) return data;
  const table = (src, dst) => {
    const scale = src / dst, i0 = new Int32Array(dst), i1 = new Int32Array(dst), l = new Float32Array(dst);
    for (let d = 0; d < dst; d++) {
      const s = Math.max(f32(scale * (d + 0.5) - 0.5), 0);
      i0[d] = Math.floor(s); i1[d] = i0[d] + (i0[d] < src - 1 ? 1 : 0); l[d] = f32(s - i0[d]);
    }
    return { i0, i1, l };
  };
  const ty = table(h, dh), tx = table(w, dw), out = new Float32Array(c * dh * dw);
  for (let k = 0; k < c; k++) {
    const src = k * h * w, dst = k * dh * dw;
    for (let y = 0; y < dh; y++) {
      const r0 = src + ty.i0[y] * w, r1 = src + ty.i1[y] * w, ly = ty.l[y], gy = 1 - ly;
      for (let x = 0; x < dw; x++) {
        const lx = tx.l[x], gx = 1 - lx, a = tx.i0[x], b = tx.i1[x];
        out[dst + y * dw + x] = gy * (gx * data[r0 + a] + lx * data[r0 + b]) + ly * (gx * data[r1 + a] + lx * data[r1 + b]);
      }
    }
  }
  return out;
}

/** Softmax of a float array (computed in double, returned as float32 values). */
export function softmax(values) {
  let max = -Infinity;
  for (const v of values) max = Math.max(max, v);
  const e = Array.from(values, (v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => f32(v / sum));
}

/** Python's round(x, digits) for the JSON a predictor's to_dict() gives. */
export function roundTo(x, digits) {
  const k = 10 ** digits;
  return rint(x * k) / k;
}

/** A canvas holding an ImageData, for drawing. */
export function canvasOf(imageData) {
  const canvas = document.createElement("canvas");
  canvas.width = imageData.width; canvas.height = imageData.height;
  canvas.getContext("2d").putImageData(imageData, 0, 0);
  return canvas;
}
