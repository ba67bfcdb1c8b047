// One colour per backend, shared by the graph view, legend and tables. A QColor (Qt Gui,
// no widgets): the item models' colour roles use it, so it lives with them.
#pragma once

#include <QColor>
#include <QString>

namespace collage {

inline QColor backend_color(const QString& backend) {
  if (backend == "native") return QColor(0x9e, 0x9e, 0x9e);
  if (backend == "onednn") return QColor(0x42, 0x85, 0xf4);
  if (backend == "blas") return QColor(0xf4, 0xb4, 0x00);
  if (backend == "xnnpack") return QColor(0x0f, 0x9d, 0x58);
  if (backend == "stream-gemm") return QColor(0xdb, 0x44, 0x37);  // the project's own GEMM: red
  if (backend == "strassen") return QColor(0xf0, 0x7b, 0x3f);     // the same kernel, 7 products for 8: orange
  if (backend == "onnxruntime") return QColor(0x00, 0xac, 0xc1);  // a whole runtime of its own: cyan
  if (backend == "onnxruntime-serial")
    return QColor(0x80, 0xde, 0xea);  // the same kernels on one thread: a paler cyan
  // Graph-level backends: a darker shade of their library's colour.
  if (backend == "onednn-region") return QColor(0x1a, 0x4f, 0xb0);
  if (backend == "xnnpack-graph") return QColor(0x0a, 0x6b, 0x3c);
  if (backend == "onnxruntime-region") return QColor(0x00, 0x6f, 0x7d);
  // Reduced precision: a colour of its own (purple), whatever the library.
  if (backend == "onednn-int8") return QColor(0x8e, 0x44, 0xad);
  if (backend == "onednn-bf16") return QColor(0xc0, 0x6c, 0xd8);       // a lighter purple
  if (backend == "onnxruntime-int8") return QColor(0x6a, 0x1b, 0x9a);  // a deeper purple
  if (backend == "onnxruntime-int8-region") return QColor(0x4a, 0x14, 0x8c);
  if (backend == "stream-gemm-int8") return QColor(0xad, 0x14, 0x57);  // the own GEMM's red, in int8: crimson
  return QColor::fromHsv(static_cast<int>(qHash(backend) % 360), 140, 220);
}

}  // namespace collage
