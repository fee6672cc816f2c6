// Image operations of the OCR pipeline in the browser, ported from ocr/data/transforms.py (det_resize, normalize)
// and ocr/pipeline/crops.py (crop_box, padded_width, batch_tensor) with OpenCV's semantics: cv2.resize
// INTER_LINEAR on uint8 (11-bit fixed-point weights), cv2.getPerspectiveTransform and cv2.warpPerspective with
// INTER_CUBIC (OpenCV 5: floating-point positions and weights) and BORDER_REPLICATE. Images are { data: Uint8Array RGB
// (3 bytes a pixel), width, height }.

import { roundHalfEven } from "./ocr_db.js";

const f32 = Math.fround;

/** An RGB image from ImageData (RGBA). */
export function rgbFromImageData(imageData) {
  const { width, height, data } = imageData;
  const out = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < width * height; i++, j += 4) {
    out[i * 3] = data[j]; out[i * 3 + 1] = data[j + 1]; out[i * 3 + 2] = data[j + 2];
  }
  return { data: out, width, height };
}

function linearTable(srcSize, dstSize, clampWeights) {
  // OpenCV's 11-bit weights from a float32 source position; the horizontal pass puts a position outside the image
  // on its edge pixel, the vertical one keeps the weights and clamps the rows
  const scale = srcSize / dstSize;
  const idx = new Int32Array(dstSize), a0 = new Int32Array(dstSize), a1 = new Int32Array(dstSize);
  for (let d = 0; d < dstSize; d++) {
    let fx = f32((d + 0.5) * scale - 0.5);
    let sx = Math.floor(fx);
    fx = f32(fx - sx);
    if (clampWeights && sx < 0) { fx = 0; sx = 0; }
    if (clampWeights && sx >= srcSize - 1) { fx = 0; sx = srcSize - 1; }
    idx[d] = sx;
    a0[d] = roundHalfEven(f32(1 - fx) * 2048);
    a1[d] = roundHalfEven(fx * 2048);
  }
  return { idx, a0, a1 };
}

/** cv2.resize(image, (width, height)) with INTER_LINEAR as OpenCV computes it on uint8 (11-bit fixed point). */
export function resizeLinear(image, width, height) {
  const { data, width: sw, height: sh } = image;
  if (sw === width && sh === height) return { data: data.slice(), width, height };
  const xs = linearTable(sw, width, true), ys = linearTable(sh, height, false);
  const rowCache = new Map();
  const horizontal = (sy) => {
    let row = rowCache.get(sy);
    if (row) return row;
    row = new Int32Array(width * 3);
    const base = sy * sw * 3;
    for (let dx = 0; dx < width; dx++) {
      const sx = xs.idx[dx], nx = Math.min(sx + 1, sw - 1);
      for (let c = 0; c < 3; c++) {
        row[dx * 3 + c] = data[base + sx * 3 + c] * xs.a0[dx] + data[base + nx * 3 + c] * xs.a1[dx];
      }
    }
    rowCache.set(sy, row);
    if (rowCache.size > 4) rowCache.delete(rowCache.keys().next().value);
    return row;
  };
  const out = new Uint8Array(width * height * 3);
  for (let dy = 0; dy < height; dy++) {
    const sy = ys.idx[dy];
    const r0 = horizontal(Math.min(Math.max(sy, 0), sh - 1)), r1 = horizontal(Math.min(Math.max(sy + 1, 0), sh - 1));
    const b0 = ys.a0[dy], b1 = ys.a1[dy];
    const o = dy * width * 3;
    for (let x = 0; x < width * 3; x++) {
      // OpenCV's SIMD vertical pass: 16-bit high products, then a rounding shift by 2
      const v = ((((r0[x] >> 4) * b0) >> 16) + (((r1[x] >> 4) * b1) >> 16) + 2) >> 2;
      out[o + x] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
  }
  return { data: out, width, height };
}

/** det_resize: the size an image is fed to a DB detector at ([height, width], multiples of `multiple`). */
export function detSize(height, width, limitSideLen = 960, limitType = "max", multiple = 32) {
  let ratio;
  if (limitType === "max") ratio = Math.max(height, width) > limitSideLen ? limitSideLen / Math.max(height, width) : 1;
  else if (limitType === "min") ratio = Math.min(height, width) < limitSideLen ? limitSideLen / Math.min(height, width) : 1;
  else throw new Error(`limit_type=${limitType} must be 'max' or 'min'`);
  const rh = Math.max(multiple, roundHalfEven(Math.trunc(height * ratio) / multiple) * multiple);
  const rw = Math.max(multiple, roundHalfEven(Math.trunc(width * ratio) / multiple) * multiple);
  return [rh, rw];
}

/** normalize: CHW float32 of (x / 255 - mean) / std, channels swapped to BGR when `bgr`, written into `out` at
 * `offset` with row stride `stride` (a padded batch) or packed. */
export function normalizeInto(image, mean, std, bgr, out, offset = 0, stride = image.width, planeSize = null) {
  const { data, width, height } = image;
  const plane = planeSize ?? width * height;
  const lut = new Float32Array(256);
  for (let c = 0; c < 3; c++) {
    const src = bgr ? 2 - c : c;
    const m = f32(mean[c]), s = f32(std[c]);
    for (let v = 0; v < 256; v++) lut[v] = f32(f32(f32(v / 255) - m) / s); // the float32 steps numpy takes
    const base = offset + c * plane;
    for (let y = 0; y < height; y++) {
      const row = base + y * stride, from = y * width * 3 + src;
      for (let x = 0; x < width; x++) out[row + x] = lut[data[from + x * 3]];
    }
  }
  return out;
}

function solve(a, b) {
  // Gaussian elimination with partial pivoting on an n x n system (double precision, as cv::solve DECOMP_LU)
  const n = b.length;
  for (let i = 0; i < n; i++) {
    let p = i;
    for (let r = i + 1; r < n; r++) if (Math.abs(a[r][i]) > Math.abs(a[p][i])) p = r;
    [a[i], a[p]] = [a[p], a[i]]; [b[i], b[p]] = [b[p], b[i]];
    for (let r = i + 1; r < n; r++) {
      const k = a[r][i] / a[i][i];
      for (let c = i; c < n; c++) a[r][c] -= k * a[i][c];
      b[r] -= k * b[i];
    }
  }
  const x = new Array(n).fill(0);
  for (let i = n - 1; i >= 0; i--) {
    let s = b[i];
    for (let c = i + 1; c < n; c++) s -= a[i][c] * x[c];
    x[i] = s / a[i][i];
  }
  return x;
}

/** cv2.getPerspectiveTransform(src, dst): the 3x3 homography (row-major, 9 numbers) taking src points to dst. */
export function perspectiveTransform(src, dst) {
  const a = [], b = [];
  for (let i = 0; i < 4; i++) {
    const [x, y] = src[i].map(f32), [u, v] = dst[i].map(f32);
    a.push([x, y, 1, 0, 0, 0, -x * u, -y * u]); b.push(u);
  }
  for (let i = 0; i < 4; i++) {
    const [x, y] = src[i].map(f32), [u, v] = dst[i].map(f32);
    a.push([0, 0, 0, x, y, 1, -x * v, -y * v]); b.push(v);
  }
  return [...solve(a, b), 1];
}

function invert3(m) {
  const [a, b, c, d, e, f, g, h, i] = m;
  const A = e * i - f * h, B = -(d * i - f * g), C = d * h - e * g;
  const det = a * A + b * B + c * C;
  if (det === 0) return [0, 0, 0, 0, 0, 0, 0, 0, 0];
  return [A / det, -(b * i - c * h) / det, (b * f - c * e) / det,
          B / det, (a * i - c * g) / det, -(a * f - c * d) / det,
          C / det, -(a * h - b * g) / det, (a * e - b * d) / det];
}

function cubicWeights(x, out) {
  // Keys' cubic convolution with A = -0.75 (OpenCV's INTER_CUBIC) at the fraction x of a pixel
  const A = -0.75;
  out[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  out[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  out[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  out[3] = 1 - out[0] - out[1] - out[2];
}

/** cv2.warpPerspective(image, matrix, (width, height), flags=INTER_CUBIC, borderMode=BORDER_REPLICATE) as OpenCV 5
 * computes it: each output pixel's source position in floating point (no 1/32-pixel tables), cubic weights of its
 * fractions, the sum rounded. */
export function warpPerspectiveCubic(image, matrix, width, height) {
  const { data, width: sw, height: sh } = image;
  const M = invert3(matrix);
  const out = new Uint8Array(width * height * 3);
  const wx = new Float64Array(4), wy = new Float64Array(4);
  const xx = new Int32Array(4), yy = new Int32Array(4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const W = M[6] * x + M[7] * y + M[8];
      const X = W ? (M[0] * x + M[1] * y + M[2]) / W : 0, Y = W ? (M[3] * x + M[4] * y + M[5]) / W : 0;
      const ix = Math.floor(X), iy = Math.floor(Y);
      cubicWeights(X - ix, wx);
      cubicWeights(Y - iy, wy);
      for (let k = 0; k < 4; k++) {
        xx[k] = Math.min(Math.max(ix - 1 + k, 0), sw - 1);
        yy[k] = Math.min(Math.max(iy - 1 + k, 0), sh - 1);
      }
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let k1 = 0; k1 < 4; k1++) {
          const row = yy[k1] * sw;
          let s = 0;
          for (let k2 = 0; k2 < 4; k2++) s += data[(row + xx[k2]) * 3 + c] * wx[k2];
          sum += s * wy[k1];
        }
        const v = roundHalfEven(sum);
        out[(y * width + x) * 3 + c] = v < 0 ? 0 : v > 255 ? 255 : v;
      }
    }
  }
  return { data: out, width, height };
}

/** np.rot90: a quarter turn counter-clockwise. */
export function rot90(image) {
  const { data, width, height } = image;
  const out = new Uint8Array(data.length);
  // out[i][j] = in[j][width - 1 - i]; out is width rows of height pixels
  for (let i = 0; i < width; i++) {
    for (let j = 0; j < height; j++) {
      const s = (j * width + (width - 1 - i)) * 3, d = (i * height + j) * 3;
      out[d] = data[s]; out[d + 1] = data[s + 1]; out[d + 2] = data[s + 2];
    }
  }
  return { data: out, width: height, height: width };
}

/** crop_box: the text in a box (4 points clockwise from the top-left) warped upright; tall crops turned. */
export function cropBox(image, box, tallRatio = 1.5) {
  const p = box.map(([x, y]) => [f32(x), f32(y)]);
  const dist = (a, b) => f32(Math.hypot(a[0] - b[0], a[1] - b[1]));
  const width = Math.max(Math.trunc(Math.max(dist(p[0], p[1]), dist(p[2], p[3]))), 1);
  const height = Math.max(Math.trunc(Math.max(dist(p[0], p[3]), dist(p[1], p[2]))), 1);
  const matrix = perspectiveTransform(p, [[0, 0], [width, 0], [width, height], [0, height]]);
  const crop = warpPerspectiveCubic(image, matrix, width, height);
  return crop.height / Math.max(crop.width, 1) >= tallRatio ? rot90(crop) : crop;
}

/** padded_width: the width a batch of crops is padded to at `height` (at least minWidth), a multiple of 8. */
export function paddedWidth(crops, height, minWidth, multiple = 8) {
  let ratio = minWidth / height;
  for (const c of crops) ratio = Math.max(ratio, c.width / Math.max(c.height, 1));
  return Math.ceil(Math.trunc(height * ratio) / multiple) * multiple;
}

/** batch_tensor: [B, 3, height, width] float32, each crop resized to height (aspect kept, at most width wide),
 * normalised, zero-padded on the right. */
export function batchTensor(crops, height, width, mean, std, bgr = true) {
  const plane = height * width;
  const out = new Float32Array(crops.length * 3 * plane);
  crops.forEach((crop, i) => {
    const w = Math.max(1, Math.min(width, Math.ceil((height * crop.width) / Math.max(crop.height, 1))));
    normalizeInto(resizeLinear(crop, w, height), mean, std, bgr, out, i * 3 * plane, width, plane);
  });
  return out;
}
