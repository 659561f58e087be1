/// Work that sets off more of the same kind on one thread (a finish that finishes another,
/// a cancel that cancels another), each inside the one before, with a bounded stack: up to
/// `depthLimit` levels run nested, as they happen; deeper ones are handed to the outermost
/// level on the thread, which runs them in turn, in the order handed back, once the one it
/// runs has returned. The outermost call returns only after everything handed to it ran.
package struct BoundedNesting: Sendable {
    /// The levels of one thread.
    /// - Note: `@unchecked Sendable`: only the thread whose thread-local slot points at it
    ///   touches it.
    private final class Frame: @unchecked Sendable {
        var depth = 0
        var handedBack: [() -> Void] = []
        var next = 0
    }

    package let depthLimit: Int
    private let current = ThreadLocalPointer()

    package init(depthLimit: Int) {
        precondition(depthLimit > 0, "Operations: a nesting limit must be at least 1 (\(depthLimit))")
        self.depthLimit = depthLimit
    }

    /// Runs `work` now, or hands it to the outermost level when this thread is `depthLimit`
    /// levels deep.
    package func run(_ work: @escaping () -> Void) {
        if let pointer = current.value {
            let frame = Unmanaged<Frame>.fromOpaque(pointer).takeUnretainedValue()
            guard frame.depth < depthLimit else {
                frame.handedBack.append(work)
                return
            }
            frame.depth += 1
            work()
            frame.depth -= 1
            return
        }
        let frame = Frame()
        current.set(Unmanaged.passUnretained(frame).toOpaque())
        frame.depth = 1
        work()
        runHandedBack(frame)
        current.set(nil)
        withExtendedLifetime(frame) {}
    }

    /// Runs the work handed back on this thread that has not run yet (a thread about to
    /// block must not wait for some of it).
    package func runHandedBack() {
        guard let pointer = current.value else { return }
        runHandedBack(Unmanaged<Frame>.fromOpaque(pointer).takeUnretainedValue())
    }

    /// In the order handed back: each may hand back more.
    private func runHandedBack(_ frame: Frame) {
        while frame.next < frame.handedBack.count {
            let next = frame.handedBack[frame.next]
            frame.handedBack[frame.next] = {}
            frame.next += 1
            next()
        }
    }
}
