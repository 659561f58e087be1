import Operations
import OperationsRecording

/// 8. A scrolling list: when a row appears its image provider starts; when it leaves
/// before finishing, its provider is cancelled.
public struct ListChapter: Chapter {
    public static let name = "list"
    public static let title = "list: load when a row appears, cancel when it leaves"
    public init() {}

    enum RowState: Character { case waiting = "·", loading = "↓", done = "■", cancelled = "×" }

    public func run(in context: TourContext) throws -> ChapterResult {
        var result = ChapterResult(chapter: Self.name)
        let server = try context.blockingImageServer()
        let rows = context.settings.listRows, viewport = context.settings.viewport
        let recorder = OperationRecorder(title: "List: \(rows) rows, a viewport of \(viewport), scrolling")
        var providers: [Int: ImageProvider] = [:]
        var states = [RowState](repeating: .waiting, count: rows)
        var cancelled = Set<Int>()
        // Scroll like a person: slowly through the first fifth (rows finish loading), a
        // quick flick through the middle (rows leave before their images arrive and are
        // cancelled), slowly again at the end.
        let slowRows = max(1, (rows - viewport) / 5)
        func tick(_ top: Int) -> Double {
            top < slowRows || top > rows - viewport - slowRows ? context.settings.unit / 3 : context.settings.unit / 16
        }
        // The slow image (row 1) is kept back by the server until the scrolling ends: at
        // least one row leaves the viewport mid-download, however loaded the machine.
        let slow = server.hold(image: ImageServer.slowImage)
        defer { slow.release() }
        // Scroll one row per tick, then stop at the bottom and let the last rows finish.
        for top in 0...(rows - viewport) {
            let visible = top..<(top + viewport)
            for row in visible where providers[row] == nil {
                let provider = ImageProvider(index: row, server: server, folder: context.output, prefix: "8-row", recorder: recorder)
                providers[row] = provider
                provider.start()
            }
            for (row, provider) in providers where !visible.contains(row) && !provider.isFinished && !cancelled.contains(row) {
                provider.cancel()
                cancelled.insert(row)
            }
            for (row, provider) in providers {
                states[row] = cancelled.contains(row) ? .cancelled : provider.isFinished ? .done : .loading
            }
            if context.console.isTerminal {
                let strip = String(states.map(\.rawValue))
                let window = String(strip.enumerated().map { visible.contains($0.offset) ? $0.element : " " })
                context.console.redraw("  rows [\(window)] top \(top)   ")
            }
            Thread.sleep(forTimeInterval: tick(top))
        }
        context.console.redraw("", finished: true)
        slow.release()
        for provider in providers.values { provider.wait() }
        for (row, provider) in providers {
            states[row] = provider.delivered ? .done : cancelled.contains(row) ? .cancelled : .loading
        }
        let delivered = providers.values.filter(\.delivered)
        // A row cancelled during its last step may still have delivered: it counts as delivered.
        let cancelledRows = providers.filter { cancelled.contains($0.key) && !$0.value.delivered }
        let bytesSaved = cancelledRows.reduce(0) { sum, entry in
            sum + (entry.value.download.bytesReceived == 0 ? server.sizes[entry.key] : 0)
        }
        let filterSeconds = delivered.map { $0.filter.seconds + $0.vignette.seconds }
        let meanFilter = filterSeconds.isEmpty ? 0 : filterSeconds.reduce(0, +) / Double(filterSeconds.count)
        let filtersSkipped = cancelledRows.filter { $0.value.filter.image == nil }.count
        result.numbers["started"] = Double(providers.count)
        result.numbers["finished"] = Double(delivered.count)
        result.numbers["cancelled"] = Double(cancelledRows.count)
        result.numbers["bytes saved"] = Double(bytesSaved)
        let lines = [
            "\(providers.count) rows started, \(delivered.count) images delivered, \(cancelledRows.count) cancelled when their row left the viewport",
            String(format: "saved against not cancelling: %d bytes not downloaded, %d filter runs (≈ %.3f s of CPU) not done", bytesSaved, filtersSkipped, Double(filtersSkipped) * meanFilter),
            "rows: " + String(states.map(\.rawValue)) + "   (■ done, × cancelled)",
        ]
        for line in lines { context.console.say("   " + line) }
        try context.writeRecording(recorder, chapter: "8-list", notes: lines, into: &result)
        return result
    }
}
