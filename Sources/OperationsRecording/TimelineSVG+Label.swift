/// Where an operation's name goes in its row, so that it never covers the row's waiting
/// strip or bar: inside the bar when it fits; else right of the bar; else left of the whole
/// row (its waiting strip included); else, with no room beside the row, just left of the
/// bar on a white plate that hides the stripes under it. The page's script makes the same
/// choice with the measured width (`Recording.layoutScript`).
extension TimelineSVG {
    enum LabelPlace: Equatable {
        case inside, right, leftOfRow, onPlate
    }

    /// The place and the x of the text's anchor, for a label `width` wide; all in pixels.
    static func place(
        width: Double, rowStart: Double, barStart: Double, barEnd: Double, mayBeInside: Bool, pageRight: Double
    ) -> (LabelPlace, Double) {
        if mayBeInside, width + 8 <= barEnd - barStart { return (.inside, barStart + 4) }
        if barEnd + 4 + width <= pageRight { return (.right, barEnd + 4) }
        if rowStart - 4 - width >= 2 { return (.leftOfRow, rowStart - 4) }
        return (.onPlate, max(barStart - 4, width + 4))
    }

    /// A row's label (`t0`…`t1`: its bar, or its waiting strip for one that never ran) and
    /// the plate it may sit on, hidden unless used; with the pixels the text covers.
    func label(_ text: String, t0: Double, t1: Double, rowStart: Double, center: Double, mayBeInside: Bool) -> (markup: String, extent: ClosedRange<Double>) {
        let x0 = x(t0), x1 = max(x(t1), x0 + 2)
        let width = Double(text.count) * TimelineStyle.characterWidth
        let (place, position) = Self.place(
            width: width, rowStart: x(rowStart), barStart: x0, barEnd: x1, mayBeInside: mayBeInside,
            pageRight: TimelineStyle.defaultWidth - TimelineStyle.right)
        let anchor = place == .inside || place == .right ? "start" : "end"
        let fill = place == .inside ? "#fff" : "#222"
        // Beside a bar, a white halo keeps the label readable over arrows and grid lines.
        let halo = place == .inside ? "none" : "#fff"
        var result = "<rect class=\"label-plate\" x=\"\(Markup.number(position - width - 2))\" y=\"\(Markup.number(center - 7))\""
        result += " width=\"\(Markup.number(width + 4))\" height=\"14\" rx=\"2\" fill=\"#fff\" fill-opacity=\"0.92\""
        result += place == .onPlate ? "/>" : " visibility=\"hidden\"/>"
        result += "<text class=\"label\" data-inside=\"\(mayBeInside)\" data-t0=\"\(t0)\" data-t1=\"\(t1)\" data-row=\"\(rowStart)\""
        result += " x=\"\(Markup.number(position))\" y=\"\(Markup.number(center + 4))\" text-anchor=\"\(anchor)\" fill=\"\(fill)\" stroke=\"\(halo)\""
        result += " stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\" pointer-events=\"none\">\(Markup.escape(text))</text>"
        return (result, anchor == "start" ? position...(position + width) : (position - width)...position)
    }
}
