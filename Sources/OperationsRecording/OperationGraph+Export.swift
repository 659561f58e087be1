extension OperationGraph {
    /// A node's second line: `finished · succeeded`, `pending`, `finished · cancelled: reason`.
    func status(_ node: Node) -> String {
        guard let outcome = node.outcome else { return node.state }
        switch outcome {
        case .cancelled(let reason?): return "\(node.state) · cancelled: \(reason)"
        case .failed(let error): return "\(node.state) · failed: \(error)"
        default: return "\(node.state) · \(outcome.name)"
        }
    }

    /// The fill of a node: by outcome, or by state while not finished.
    func fill(_ node: Node) -> (fill: String, stroke: String) {
        switch node.outcome?.name ?? node.state {
        case "succeeded": ("#d6eedd", "#3b9c5a")
        case "cancelled": ("#fbe3c4", "#e07b00")
        case "failed": ("#f6d2d2", "#cf3d3d")
        case "executing": ("#d8e4f6", "#3f6fb5")
        default: ("#eeeeee", "#8a8a8a")
        }
    }

    /// Graphviz DOT: arrows from each dependency to the operation that waits for it; nodes
    /// filled by outcome (or state) with it written under the name; cycles drawn red and
    /// bold. Render with `dot -Tsvg graph.dot > graph.svg`.
    public func dot() -> String {
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n") + "\""
        }
        var lines = ["digraph \(quoted(title)) {", "  rankdir=LR;",
                     "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];",
                     "  edge [color=\"#555555\"];"]
        for node in nodes {
            let (fill, stroke) = fill(node)
            var attributes = "label=\(quoted(node.name + "\n" + status(node))), fillcolor=\"\(fill)\", color=\"\(stroke)\""
            if node.isInCycle { attributes += ", color=\"#cf3d3d\", penwidth=3, class=\"cycle\"" }
            lines.append("  n\(node.id) [\(attributes)];")
        }
        for edge in edges {
            let attributes = edge.isInCycle ? " [color=\"#cf3d3d\", penwidth=2.5, label=\"cycle\", fontcolor=\"#cf3d3d\"]" : ""
            lines.append("  n\(edge.dependency) -> n\(edge.dependent)\(attributes);")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A Mermaid flowchart (renders in GitHub's Markdown and mermaid.live): the same nodes
    /// and arrows as ``dot()``, with classes per outcome and cycles in red, thick arrows.
    public func mermaid() -> String {
        func label(_ text: String) -> String {
            text.replacingOccurrences(of: "\"", with: "#quot;").replacingOccurrences(of: "<", with: "#lt;")
                .replacingOccurrences(of: ">", with: "#gt;").replacingOccurrences(of: "\n", with: " ")
        }
        var lines = ["flowchart LR"]
        for node in nodes {
            let className = node.isInCycle ? "cycle" : (node.outcome?.name ?? node.state)
            lines.append("  n\(node.id)[\"\(label(node.name))<br/>\(label(status(node)))\"]:::\(className)")
        }
        var cycleLinks: [Int] = []
        for (number, edge) in edges.enumerated() {
            if edge.isInCycle {
                lines.append("  n\(edge.dependency) ==>|cycle| n\(edge.dependent)")
                cycleLinks.append(number)
            } else {
                lines.append("  n\(edge.dependency) --> n\(edge.dependent)")
            }
        }
        for name in ["succeeded", "cancelled", "failed", "executing", "pending", "unfinished"] {
            let (fill, stroke) = fill(Node(id: 0, name: "", state: name, outcome: nil, isInCycle: false))
            lines.append("  classDef \(name) fill:\(fill),stroke:\(stroke)")
        }
        lines.append("  classDef cycle fill:#f6d2d2,stroke:#cf3d3d,stroke-width:3px")
        if !cycleLinks.isEmpty {
            lines.append("  linkStyle \(cycleLinks.map(String.init).joined(separator: ",")) stroke:#cf3d3d,stroke-width:3px")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
