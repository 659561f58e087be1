import Foundation

/// Prints the tour: plain lines, and a progress bar redrawn in place when standard output
/// is a terminal (plain lines otherwise, for CI logs).
public final class Console: Sendable {
    /// Where a console's text goes.
    public enum Output: Sendable {
        /// Standard output: the tour.
        case standardOutput
        /// Nowhere (still kept in ``Console/transcript``): tests, whose log shows only
        /// test results.
        case discarded
    }

    public let isTerminal: Bool
    private let output: Output
    private let lock = NSLock()
    /// Everything said, for `transcript`.
    private let lines = Protected<[String]>()

    public init(isTerminal: Bool = isatty(STDOUT_FILENO) == 1, output: Output = .standardOutput) {
        self.isTerminal = isTerminal
        self.output = output
    }

    /// A console that writes nothing and keeps a transcript: for tests.
    public static func silent() -> Console { Console(isTerminal: false, output: .discarded) }

    public func say(_ line: String) {
        lines.append(line)
        write(line + "\n")
    }

    /// Shows progress of `label`: a bar on a terminal, a line at 0%, 50% and 100% otherwise.
    public func progress(_ label: String, done: Int, total: Int) {
        guard total > 0 else { return }
        if isTerminal {
            let width = 30, filled = width * done / total
            let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
            redraw("  \(label) [\(bar)] \(done)/\(total)", finished: done == total)
        } else if done == 0 || done == total || done * 2 == total {
            say("  \(label): \(done)/\(total)")
        }
    }

    /// Redraws the current terminal line with `text` (ending the line when `finished`).
    /// Only on a terminal; does nothing otherwise.
    public func redraw(_ text: String, finished: Bool = false) {
        guard isTerminal else { return }
        write("\r" + text + (finished ? "\n" : ""))
    }

    /// Everything said so far (for tests).
    public var transcript: [String] { lines.current }

    private func write(_ text: String) {
        guard case .standardOutput = output else { return }
        lock.withLock {
            print(text, terminator: "")
            fflush(nil)
        }
    }
}
