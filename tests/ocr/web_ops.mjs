// Runs the OCR web kit's pure operations (ocr/web/ocr_db.js, ocr_image.js, ocr.js) on the cases test_web.py
// writes, under node: `node web_ops.mjs CASES.json CLIPPER.js` prints the results as JSON.
import fs from "fs";
import path from "path";
import { createRequire } from "module";
import { pathToFileURL } from "url";

const [casesFile, clipperFile, webDir] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const ClipperLib = require(clipperFile);
const db = await import(pathToFileURL(path.join(webDir, "ocr_db.js")).href);
const im = await import(pathToFileURL(path.join(webDir, "ocr_image.js")).href);
const kit = await import(pathToFileURL(path.join(webDir, "ocr.js")).href);

const cases = JSON.parse(fs.readFileSync(casesFile, "utf-8"));
const bytes = (file) => new Uint8Array(fs.readFileSync(file));
const floats = (file) => { const b = fs.readFileSync(file); return new Float32Array(b.buffer, b.byteOffset, b.length / 4); };
const out = [];
for (const c of cases) {
  if (c.op === "db") {
    const prob = floats(c.file);
    const mask = db.binarize(prob, c.h, c.w, c.db.thresh, c.db.use_dilation);
    const contours = db.findContours(mask, c.h, c.w);
    const raw = db.dbBoxes(prob, c.h, c.w, c.source[0], c.source[1], c.db, ClipperLib);
    const kept = db.filterBoxes(raw.boxes, raw.scores, c.source[0], c.source[1]);
    const order = db.readingOrder(kept.boxes);
    out.push({ contours, boxes: order.map((i) => kept.boxes[i]), scores: order.map((i) => kept.scores[i]) });
  } else if (c.op === "resize") {
    out.push(Array.from(im.resizeLinear({ data: bytes(c.file), width: c.w, height: c.h }, c.to[1], c.to[0]).data));
  } else if (c.op === "crop") {
    const crop = im.cropBox({ data: bytes(c.file), width: c.w, height: c.h }, c.box);
    out.push({ width: crop.width, height: crop.height, data: Array.from(crop.data) });
  } else if (c.op === "ctc") {
    const probs = floats(c.file);
    out.push(kit.ctcGreedy(probs, c.steps, c.classes, c.characters));
  } else {
    throw new Error(`unknown op ${c.op}`);
  }
}
process.stdout.write(JSON.stringify(out));
