/// Dependency arrows, routed around the rows they do not connect: from the end of the
/// dependency's bar to the edge of its row, along the gap between rows (bars leave it
/// free) to a vertical channel, down (or up) the channel, and along the dependent's row
/// into the start of its bar. The channel is the free x nearest the dependent's start, left
/// of it, that no row in between covers (its waiting strip, bar or label); the left margin
/// when the rows in between leave nothing free.
extension TimelineSVG {
    /// What one drawn row covers: its vertical extent and the x ranges (pixels, at the
    /// default width) of its waiting strip, bar and label.
    struct RowSpan {
        /// The operation the row belongs to (its own row, or one of its parts').
        let operation: Int
        let top: Double
        let bottom: Double
        let covered: [ClosedRange<Double>]
    }

    /// Room kept between a channel and what the rows beside it cover, in pixels.
    static let channelClearance = 3.0
    /// How far left of the dependent's start the channel goes when nothing is in the way,
    /// so that the arrow's head sits on a horizontal leg.
    static let arrowLead = 8.0

    /// The x of the vertical channel between rows `from` and `to` (centers) for an arrow
    /// between `source` and `dependent`, wanted at `preferred`: the free x nearest it on its
    /// left, else on its right within the page, else the left margin.
    static func channel(
        preferred: Double, from: Double, to: Double, source: Int, dependent: Int, rows: [RowSpan], pageRight: Double
    ) -> Double {
        let low = min(from, to), high = max(from, to)
        let blocked = rows.filter { row in
            row.operation != source && row.operation != dependent && row.bottom > low && row.top < high
        }.flatMap(\.covered).map { ($0.lowerBound - channelClearance)...($0.upperBound + channelClearance) }
        func obstacle(at x: Double) -> ClosedRange<Double>? { blocked.first { $0.contains(x) } }
        var x = preferred
        while let range = obstacle(at: x) { x = range.lowerBound - 0.5 }
        if x >= 1 { return x }
        x = preferred
        while let range = obstacle(at: x), x <= pageRight { x = range.upperBound + 0.5 }
        if x <= pageRight { return x }
        return 1
    }

    mutating func arrows(_ centers: [Int: Double]) {
        var edges = 0
        let pageRight = TimelineStyle.defaultWidth - TimelineStyle.right
        for operation in recording.operations {
            guard let to = centers[operation.id] else { continue }
            let start = Self.ms(operation.started ?? operation.finished ?? operation.enqueued)
            for dependency in operation.dependencies {
                let source = recording.operations[dependency]
                guard let from = centers[dependency], let finished = source.finished else { continue }
                edges += 1
                if edges > 3_000 { return }
                let t0 = Self.ms(finished)
                let x = Self.channel(
                    preferred: x(start) - Self.arrowLead, from: from, to: to, source: dependency, dependent: operation.id,
                    rows: rowSpans, pageRight: pageRight)
                // The channel as a time, so that the page's script moves it with the window.
                let channel = (x - left) / plotWidth * span
                let style = "stroke=\"#444\" stroke-opacity=\"0.55\" fill=\"none\""
                body += "<g class=\"dependency-route\"><title>\(Markup.escape("\(operation.name) waited for \(source.name)"))</title>"
                let gap = from + (to > from ? 1 : -1) * TimelineStyle.rowHeight / 2
                body += line("dependency-leg", t0: t0, t1: t0, y0: from, y1: gap, style: style)
                body += line("dependency-leg", t0: t0, t1: channel, y0: gap, y1: gap, style: style)
                body += line("dependency-leg", t0: channel, t1: channel, y0: gap, y1: to, style: style)
                body += line("dependency", t0: channel, t1: start, y0: to, y1: to, style: style + " marker-end=\"url(#arrow)\"")
                body += "</g>\n"
            }
        }
    }

    private func line(_ className: String, t0: Double, t1: Double, y0: Double, y1: Double, style: String) -> String {
        "<line class=\"\(className)\" data-t0=\"\(t0)\" data-t1=\"\(t1)\" x1=\"\(Markup.number(x(t0)))\" y1=\"\(Markup.number(y0))\" x2=\"\(Markup.number(x(t1)))\" y2=\"\(Markup.number(y1))\" \(style)/>"
    }
}
