import Foundation

/// Prints the tour: plain lines, and a progress bar redrawn in place when standard output
/// is a terminal (plain lines otherwise, for CI logs).
public final class Console: Sendable {
    public let isTerminal: Bool
    private let lock = NSLock()
    /// Everything said, for `transcript`.
    private let lines = Protected<[String]>()

    public init(isTerminal: Bool = isatty(STDOUT_FILENO) == 1) {
        self.isTerminal = isTerminal
    }

    public func say(_ line: String) {
        lines.append(line)
        print(line)
        fflush(nil)
    }

    /// Shows progress of `label`: a bar on a terminal, a line at 0%, 50% and 100% otherwise.
    public func progress(_ label: String, done: Int, total: Int) {
        guard total > 0 else { return }
        if isTerminal {
            let width = 30, filled = width * done / total
            let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
            lock.withLock {
                print("\r  \(label) [\(bar)] \(done)/\(total)", terminator: done == total ? "\n" : "")
                fflush(nil)
            }
        } else if done == 0 || done == total || done * 2 == total {
            say("  \(label): \(done)/\(total)")
        }
    }

    /// Everything said so far (for tests).
    public var transcript: [String] { lines.current }
}

