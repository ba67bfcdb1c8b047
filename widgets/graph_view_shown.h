// GraphView's private parts shared by graph_view.cc and graph_view_zoom.cc: what the view
// shows (Shown) and its box sizes and zoom limits.
#pragma once

#include <vector>

#include "widgets/graph_view.h"

namespace collage {

constexpr double kScopeBoxWidth = 280, kScopeBoxHeight = 58;
constexpr double kMaxZoom = 8, kMaxSelectionZoom = 2, kMaxFitZoom = 1.25;

struct GraphView::Shown {
  std::vector<bool> collapsed;  // by scope
  CollapsedGraph graph;
  GraphLayout layout;  // by unit; edges in any order
};

}  // namespace collage
