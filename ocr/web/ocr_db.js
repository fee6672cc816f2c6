// DB post-processing in the browser: the port of ocr/postprocess/db.py (PaddleOCR's DBPostProcess) and of the
// reading order in ocr/pipeline/crops.py. Binary map, border following (Suzuki & Abe 1985, what
// cv2.findContours(RETR_LIST, CHAIN_APPROX_SIMPLE) implements), convex hull and minimum-area rectangle
// (rotating calipers, cv2.minAreaRect), mean probability inside the box (cv2.fillPoly + cv2.mean), unclip with
// clipper-lib's ClipperOffset (pyclipper's library: Clipper 6.4.2), boxes scaled to the image.
// Pure functions of typed arrays: they run under node as in a page.

const f32 = Math.fround;

/** Round half to even (numpy's np.round and Python's round). */
export function roundHalfEven(x) {
  const r = Math.round(x);
  return (Math.abs(x % 1) === 0.5 && r % 2 !== 0) ? r - 1 : r;
}

/** The binary map: 1 where prob > thresh, optionally dilated by a 2x2 kernel anchored at (1, 1) as cv2.dilate. */
export function binarize(prob, height, width, thresh, useDilation = false) {
  const mask = new Uint8Array(height * width);
  for (let i = 0; i < mask.length; i++) mask[i] = prob[i] > thresh ? 1 : 0;
  if (!useDilation) return mask;
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let v = mask[y * width + x];
      if (!v && x > 0) v = mask[y * width + x - 1];
      if (!v && y > 0) v = mask[(y - 1) * width + x] || (x > 0 ? mask[(y - 1) * width + x - 1] : 0);
      out[y * width + x] = v;
    }
  }
  return out;
}

// the 8 neighbours counter-clockwise on screen (y down), starting east: [dy, dx]
const DIRS = [[0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1], [1, 0], [1, 1]];

/**
 * Every border of the binary map (outer borders and hole borders, 8-connected foreground), as
 * cv2.findContours(RETR_LIST, CHAIN_APPROX_SIMPLE) finds them: each an array of [x, y] points where the chain
 * turns. The image is framed by a zero pixel so that regions touching the edge are traced too (OpenCV 4 does the
 * same).
 */
export function findContours(mask, height, width) {
  const W = width + 2, H = height + 2;
  const f = new Int32Array(W * H);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) f[(y + 1) * W + x + 1] = mask[y * width + x] ? 1 : 0;
  }
  const offs = DIRS.map(([dy, dx]) => dy * W + dx);
  const contours = [];
  let nbd = 1;
  for (let i = 1; i < H - 1; i++) {
    for (let j = 1; j < W - 1; j++) {
      const p = i * W + j;
      const v = f[p];
      if (v === 0) continue;
      let from;
      if (v === 1 && f[p - 1] === 0) from = 4; // outer border: start from the west neighbour
      else if (v >= 1 && f[p + 1] === 0) from = 0; // hole border: start from the east neighbour
      else continue;
      nbd += 1;
      contours.push(followBorder(f, offs, W, p, from, nbd));
    }
  }
  return contours;
}

function followBorder(f, offs, W, start, from, nbd) {
  // 3.1: clockwise from `from` around the start for a non-zero pixel
  let d1 = -1;
  for (let k = 0; k < 8; k++) {
    const d = (from - k + 8) % 8;
    if (f[start + offs[d]] !== 0) { d1 = d; break; }
  }
  const toXY = (q) => [(q % W) - 1, Math.floor(q / W) - 1];
  if (d1 < 0) { // an isolated pixel
    f[start] = -nbd;
    return [toXY(start)];
  }
  const p1 = start + offs[d1];
  let p3 = start;
  let back = d1; // direction from p3 to p2 (the previous pixel)
  const points = [];
  let lastDir = -1, firstDir = -1;
  for (;;) {
    // 3.3: counter-clockwise around p3 from the direction after p2's
    let d4 = -1, eastZeroSeen = false;
    for (let k = 1; k <= 8; k++) {
      const d = (back + k) % 8;
      if (f[p3 + offs[d]] !== 0) { d4 = d; break; }
      if (d === 0) eastZeroSeen = true;
    }
    // 3.4
    if (eastZeroSeen) f[p3] = -nbd;
    else if (f[p3] === 1) f[p3] = nbd;
    const p4 = p3 + offs[d4];
    if (d4 !== lastDir) points.push(toXY(p3)); // CHAIN_APPROX_SIMPLE: keep only where the chain turns
    if (firstDir < 0) firstDir = d4;
    lastDir = d4;
    // 3.5
    if (p4 === start && p3 === p1) break;
    back = (d4 + 4) % 8;
    p3 = p4;
  }
  // the start itself is no turn when the chain enters it in the direction it leaves it
  if (points.length > 1 && lastDir === firstDir) points.shift();
  return points;
}

/** The convex hull of [x, y] points (monotone chain), counter-clockwise on screen; collinear points dropped. */
export function convexHull(points) {
  const pts = points.map((p) => [p[0], p[1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (pts.length <= 2) return pts;
  const cross = (o, a, b) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const lower = [], upper = [];
  for (const p of pts) {
    while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], p) <= 0) lower.pop();
    lower.push(p);
  }
  for (let i = pts.length - 1; i >= 0; i--) {
    const p = pts[i];
    while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], p) <= 0) upper.pop();
    upper.push(p);
  }
  lower.pop(); upper.pop();
  const hull = lower.concat(upper);
  return hull.length ? hull : [pts[0]];
}

/**
 * The minimum-area rectangle of the points (cv2.minAreaRect): { corners: 4 [x, y] points, width, height }.
 * Every hull edge is tried as a side of the rectangle; the smallest area wins.
 */
export function minAreaRect(points) {
  const hull = convexHull(points);
  if (hull.length === 1) return { corners: [0, 1, 2, 3].map(() => [hull[0][0], hull[0][1]]), width: 0, height: 0 };
  if (hull.length === 2) {
    const [a, b] = hull;
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
    return { corners: [[a[0], a[1]], [b[0], b[1]], [b[0], b[1]], [a[0], a[1]]], width: len, height: 0 };
  }
  let best = null;
  for (let i = 0; i < hull.length; i++) {
    const a = hull[i], b = hull[(i + 1) % hull.length];
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
    if (len === 0) continue;
    const ux = (b[0] - a[0]) / len, uy = (b[1] - a[1]) / len;
    let minU = Infinity, maxU = -Infinity, minV = Infinity, maxV = -Infinity;
    for (const p of hull) {
      const u = (p[0] - a[0]) * ux + (p[1] - a[1]) * uy;
      const v = -(p[0] - a[0]) * uy + (p[1] - a[1]) * ux;
      if (u < minU) minU = u; if (u > maxU) maxU = u;
      if (v < minV) minV = v; if (v > maxV) maxV = v;
    }
    const area = (maxU - minU) * (maxV - minV);
    if (best === null || area < best.area - 1e-9) best = { area, a, ux, uy, minU, maxU, minV, maxV };
  }
  const { a, ux, uy, minU, maxU, minV, maxV } = best;
  const at = (u, v) => [f32(a[0] + u * ux - v * uy), f32(a[1] + u * uy + v * ux)];
  return { corners: [at(minU, minV), at(maxU, minV), at(maxU, maxV), at(minU, maxV)],
           width: maxU - minU, height: maxV - minV };
}

/** mini_box: the minimum-area rectangle, 4 points clockwise from the top-left as Python orders them, and its
 * short side. */
export function miniBox(points) {
  const rect = minAreaRect(points);
  const pts = rect.corners.map((p, i) => [p, i]).sort((a, b) => a[0][0] - b[0][0] || a[1] - b[1]).map((e) => e[0]);
  const [first, fourth] = pts[1][1] > pts[0][1] ? [0, 1] : [1, 0];
  const [second, third] = pts[3][1] > pts[2][1] ? [2, 3] : [3, 2];
  return { box: [pts[first], pts[second], pts[third], pts[fourth]], shortSide: Math.min(rect.width, rect.height) };
}

/** Fill an integer polygon into a Uint8Array mask of size h x w, as cv2.fillPoly(LINE_8) fills it: the edges drawn
 * with 8-connected Bresenham lines, then the scan-line spans between edges (16.16 fixed point). */
export function fillPoly(mask, h, w, poly) {
  const n = poly.length;
  const setPixel = (x, y) => { if (x >= 0 && x < w && y >= 0 && y < h) mask[y * w + x] = 1; };
  const edges = [];
  for (let i = 0; i < n; i++) {
    const p0 = poly[(i + n - 1) % n], p1 = poly[i];
    drawLine(setPixel, w, h, p0, p1);
    if (p0[1] === p1[1]) continue;
    const [top, bottom] = p0[1] < p1[1] ? [p0, p1] : [p1, p0];
    const x0 = top[0] * 65536, dx = Math.trunc(((p1[0] - p0[0]) * 65536) / (p1[1] - p0[1]));
    edges.push({ y0: top[1], y1: bottom[1], x: x0, dx });
  }
  if (edges.length < 2) return;
  let yMin = Infinity, yMax = -Infinity;
  for (const e of edges) { yMin = Math.min(yMin, e.y0); yMax = Math.max(yMax, e.y1); }
  yMax = Math.min(yMax, h);
  for (let y = Math.max(yMin, 0); y < yMax; y++) {
    const xs = [];
    for (const e of edges) {
      if (y >= e.y0 && y < e.y1) xs.push(e.x + (y - e.y0) * e.dx);
    }
    xs.sort((a, b) => a - b);
    for (let k = 0; k + 1 < xs.length; k += 2) {
      // a span from its left edge rounded up to its right edge rounded down (the edge lines cover the rest)
      let x1 = Math.floor((xs[k] + 65535) / 65536), x2 = Math.floor(xs[k + 1] / 65536);
      if (x1 >= w || x2 < 0) continue;
      x1 = Math.max(x1, 0); x2 = Math.min(x2, w - 1);
      for (let x = x1; x <= x2; x++) mask[y * w + x] = 1;
    }
  }
}

function clipLine(w, h, p0, p1) {
  // OpenCV's clipLine: the segment cut to the image by its crossings with the borders (integer results), or null
  let [x1, y1] = p0, [x2, y2] = p1;
  const right = w - 1, bottom = h - 1;
  const code = (x, y) => (x < 0 ? 1 : 0) + (x > right ? 2 : 0) + (y < 0 ? 4 : 0) + (y > bottom ? 8 : 0);
  let c1 = code(x1, y1), c2 = code(x2, y2);
  if ((c1 & c2) === 0 && (c1 | c2) !== 0) {
    if (c1 & 12) {
      const a = c1 < 8 ? 0 : bottom;
      x1 += Math.trunc(((a - y1) * (x2 - x1)) / (y2 - y1)); y1 = a;
      c1 = (x1 < 0 ? 1 : 0) + (x1 > right ? 2 : 0);
    }
    if (c2 & 12) {
      const a = c2 < 8 ? 0 : bottom;
      x2 += Math.trunc(((a - y2) * (x2 - x1)) / (y2 - y1)); y2 = a;
      c2 = (x2 < 0 ? 1 : 0) + (x2 > right ? 2 : 0);
    }
    if ((c1 & c2) === 0 && (c1 | c2) !== 0) {
      if (c1) {
        const a = c1 === 1 ? 0 : right;
        y1 += Math.trunc(((a - x1) * (y2 - y1)) / (x2 - x1)); x1 = a; c1 = 0;
      }
      if (c2) {
        const a = c2 === 1 ? 0 : right;
        y2 += Math.trunc(((a - x2) * (y2 - y1)) / (x2 - x1)); x2 = a; c2 = 0;
      }
    }
  }
  return (c1 | c2) === 0 ? [[x1, y1], [x2, y2]] : null;
}

function drawLine(setPixel, w, h, p0, p1) {
  // OpenCV's LineIterator (8-connected, left to right) on the segment clipped to the image
  const clipped = clipLine(w, h, p0, p1);
  if (!clipped) return;
  let [[x0, y0], [x1, y1]] = clipped;
  if (x1 < x0) { [x0, y0, x1, y1] = [x1, y1, x0, y0]; }
  const dxAbs = x1 - x0, dyAbs = Math.abs(y1 - y0), sy = y1 < y0 ? -1 : 1;
  const steep = dyAbs > dxAbs;
  const major = steep ? dyAbs : dxAbs, minor = steep ? dxAbs : dyAbs;
  let err = major - 2 * minor;
  let x = x0, y = y0;
  for (let k = 0; k <= major; k++) {
    setPixel(x, y);
    if (err < 0) {
      err += 2 * major - 2 * minor;
      x += 1; y += sy;
    } else {
      err -= 2 * minor;
      if (steep) y += sy; else x += 1;
    }
  }
}

/** box_score_fast: the mean probability inside the polygon (float32, as Python keeps the scores). */
export function boxScoreFast(prob, h, w, box) {
  let xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity;
  for (const [x, y] of box) {
    xmin = Math.min(xmin, x); xmax = Math.max(xmax, x); ymin = Math.min(ymin, y); ymax = Math.max(ymax, y);
  }
  const clip = (v, hi) => Math.min(Math.max(v, 0), hi);
  xmin = clip(Math.floor(xmin), w - 1); xmax = clip(Math.ceil(xmax), w - 1);
  ymin = clip(Math.floor(ymin), h - 1); ymax = clip(Math.ceil(ymax), h - 1);
  const mh = ymax - ymin + 1, mw = xmax - xmin + 1;
  const mask = new Uint8Array(mh * mw);
  fillPoly(mask, mh, mw, box.map(([x, y]) => [Math.trunc(f32(x - xmin)), Math.trunc(f32(y - ymin))]));
  let sum = 0, count = 0;
  for (let y = 0; y < mh; y++) {
    for (let x = 0; x < mw; x++) {
      if (mask[y * mw + x]) { sum += prob[(y + ymin) * w + x + xmin]; count += 1; }
    }
  }
  return count ? f32(sum / count) : 0;
}

/** unclip: the box grown by area * ratio / perimeter with round joins (clipper-lib), the longest resulting path. */
export function unclip(box, ratio, ClipperLib) {
  let area = 0, length = 0;
  for (let i = 0; i < box.length; i++) {
    const [x0, y0] = box[i], [x1, y1] = box[(i + 1) % box.length];
    area += x1 * y0 - x0 * y1;
    length += f32(Math.sqrt(f32(f32(x1 - x0) ** 2 + f32(y1 - y0) ** 2)));
  }
  area = Math.abs(area) / 2;
  if (length === 0) return [];
  const offset = new ClipperLib.ClipperOffset();
  offset.AddPath(box.map(([x, y]) => ({ X: Math.trunc(x), Y: Math.trunc(y) })), ClipperLib.JoinType.jtRound,
                 ClipperLib.EndType.etClosedPolygon);
  const paths = new ClipperLib.Paths();
  offset.Execute(paths, (area * ratio) / length);
  if (!paths.length) return [];
  let longest = paths[0];
  for (const p of paths) if (p.length > longest.length) longest = p;
  return longest.map((pt) => [pt.X, pt.Y]);
}

/**
 * DBPostProcess.__call__ on one probability map [h, w]: boxes (4 [x, y] points each) in the source image's pixels
 * and their scores.
 * @param {Float32Array} prob
 * @param {object} db thresh, box_thresh, unclip_ratio, max_candidates, min_size, use_dilation, score_mode
 */
export function dbBoxes(prob, h, w, sourceH, sourceW, db, ClipperLib) {
  const mask = binarize(prob, h, w, db.thresh, Boolean(db.use_dilation));
  const contours = findContours(mask, h, w).slice(0, db.max_candidates ?? 1000);
  const minSize = db.min_size ?? 3;
  const boxes = [], scores = [];
  for (const contour of contours) {
    const { box, shortSide } = miniBox(contour);
    if (shortSide < minSize) continue;
    const score = (db.score_mode || "fast") === "fast" ? boxScoreFast(prob, h, w, box)
      : boxScoreFast(prob, h, w, contour);
    if (score < db.box_thresh) continue;
    const expanded = unclip(box, db.unclip_ratio, ClipperLib);
    if (!expanded.length) continue;
    const grown = miniBox(expanded);
    if (grown.shortSide < minSize + 2) continue;
    const scaled = grown.box.map(([x, y]) => [
      Math.min(Math.max(roundHalfEven(f32(f32(x / w) * sourceW)), 0), sourceW),
      Math.min(Math.max(roundHalfEven(f32(f32(y / h) * sourceH)), 0), sourceH),
    ]);
    boxes.push(scaled);
    scores.push(score);
  }
  return { boxes, scores };
}

/** order_points_clockwise: top-left, top-right, bottom-right, bottom-left (stable sorts, as Python's). */
export function orderPointsClockwise(points) {
  const byX = points.map((p, i) => [p, i]).sort((a, b) => a[0][0] - b[0][0] || a[1] - b[1]).map((e) => e[0]);
  const sortY = (pair) => pair.map((p, i) => [p, i]).sort((a, b) => a[0][1] - b[0][1] || a[1] - b[1])
    .map((e) => e[0]);
  const [tl, bl] = sortY(byX.slice(0, 2));
  const [tr, br] = sortY(byX.slice(2));
  return [tl, tr, br, bl].map((p) => [p[0], p[1]]);
}

/** filter_boxes: ordered clockwise, clipped to the image, boxes with a side of minSide or less dropped. */
export function filterBoxes(boxes, scores, imageH, imageW, minSide = 3) {
  const kept = [], keptScores = [];
  boxes.forEach((raw, k) => {
    const box = orderPointsClockwise(raw).map(([x, y]) => [Math.min(Math.max(x, 0), imageW - 1),
                                                            Math.min(Math.max(y, 0), imageH - 1)]);
    const width = f32(Math.hypot(box[0][0] - box[1][0], box[0][1] - box[1][1]));
    const height = f32(Math.hypot(box[0][0] - box[3][0], box[0][1] - box[3][1]));
    if (width <= minSide || height <= minSide) return;
    kept.push(box);
    keptScores.push(scores[k]);
  });
  return { boxes: kept, scores: keptScores };
}

/** reading_order: indices top to bottom, left to right within a line (tops within lineTolerance pixels). */
export function readingOrder(boxes, lineTolerance = 10) {
  const order = boxes.map((_, i) => i).sort((a, b) => boxes[a][0][1] - boxes[b][0][1]
    || boxes[a][0][0] - boxes[b][0][0] || a - b);
  for (let i = 0; i < order.length - 1; i++) {
    for (let j = i; j >= 0; j--) {
      const a = boxes[order[j]][0], b = boxes[order[j + 1]][0];
      if (Math.abs(b[1] - a[1]) < lineTolerance && b[0] < a[0]) {
        [order[j], order[j + 1]] = [order[j + 1], order[j]];
      } else {
        break;
      }
    }
  }
  return order;
}
