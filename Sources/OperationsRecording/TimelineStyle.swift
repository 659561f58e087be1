/// Colours, sizes and words of the timeline, shared by the SVG and the page around it.
enum TimelineStyle {
    static let colors: [String: String] = [
        "succeeded": "#3b9c5a", "cancelled": "#e07b00", "failed": "#cf3d3d", "unfinished": "#8a8a8a",
    ]
    /// The outcomes, in the order of the legend and of a group's running stack (bottom first).
    static let outcomes = ["succeeded", "cancelled", "failed", "unfinished"]
    static let waitingColor = "#7f93b3"
    static let defaultWidth = 1200.0
    static let right = 16.0
    static let axisHeight = 30.0
    static let headerHeight = 36.0
    static let rowHeight = 18.0
    /// A part of an operation (a block of a BlockOperation), under the operation's row.
    static let partRowHeight = 14.0
    static let groupRowHeight = 46.0
    /// Rough width of a character of the 11 px labels, for the layout made without a browser.
    static let characterWidth = 6.3

    static let explanationPerOperation = "One row per operation, in the order added, under its queue: striped = waiting in the queue, solid = running (colour: how it ended), | on a bar = when it was cancelled while running, ✕ = cancelled before it started, arrows = dependencies; a name too long for the space beside its row sits on a white plate. Hover for details."
    static let explanationParts = "Thin rows under an operation's row are parts of the operation above (a BlockOperation's blocks), each from when it began to when it ended: overlapping parts ran at once."
    static let explanationGrouped = "One row per group of operations named alike (numbers → #): striped band = how many waited, solid area = how many ran at once, coloured by how they ended and stacked (succeeded at the bottom; waiting and running each on its own scale), orange ticks = cancelled before they started. Hover for details."

    /// The SVG's shared definitions: the waiting hatch and the arrow head.
    static let definitions = """
        <defs><pattern id="waiting" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
        <rect width="6" height="6" fill="#dfe5ef"/><rect width="2.5" height="6" fill="\(waitingColor)"/></pattern>\
        <marker id="arrow" markerWidth="7" markerHeight="7" refX="6" refY="3.5" orient="auto">\
        <path d="M0,0 L7,3.5 L0,7 z" fill="#444"/></marker></defs>
        """
}
