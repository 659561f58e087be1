extension Recording {
    /// A self-contained HTML page (no external files or scripts) with the timeline as SVG:
    /// a header per queue with its limit and how many ran at once, one row per operation
    /// (or per group of operations named alike, above `maximumRows` operations), waiting
    /// drawn striped and running solid, operations cancelled before they started marked
    /// ✕, dependency arrows, a legend, a one-line explanation and hover details. The
    /// timeline fills the window's width.
    public func html(notes: [String] = [], maximumRows: Int = 400) -> String {
        var timeline = TimelineSVG(self, maximumRows: maximumRows)
        let svg = timeline.render()
        var explanation = timeline.isGrouped ? TimelineStyle.explanationGrouped : TimelineStyle.explanationPerOperation
        if !timeline.isGrouped, operations.contains(where: { !$0.parts.isEmpty }) { explanation += " " + TimelineStyle.explanationParts }
        let colors = TimelineStyle.colors
        let legend = TimelineStyle.outcomes.map { name in
            "<span><i style=\"background:\(colors[name]!)\"></i>\(name)</span>"
        }.joined() + "<span><i class=\"waiting\"></i>waiting in the queue</span><span><b style=\"color:\(colors["cancelled"]!)\">✕</b> cancelled before it started</span>"
            + (timeline.isGrouped ? "" : "<span><b>|</b> cancelled while running, at that moment</span><span>→ dependency</span>") + "<span><i class=\"limit\"></i>queue limit</span>"
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(Markup.escape(title))</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:16px 20px;color:#222}
            h1{font-size:20px;margin:0 0 4px}
            p{margin:3px 0;font-size:13px}
            .explanation{color:#444}.notes{color:#555}
            .legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12px;margin:8px 0}
            .legend i{display:inline-block;width:22px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
            .legend i.waiting{height:6px;vertical-align:1px;background:repeating-linear-gradient(45deg,\(TimelineStyle.waitingColor) 0 2px,#dfe5ef 2px 5px)}
            .legend i.limit{height:0;border-top:2px dashed #333;border-radius:0;vertical-align:3px}
            .legend b{margin-right:5px}
            svg{display:block}
            </style></head>
            <body>
            <h1>\(Markup.escape(title))</h1>
            <p class="summary">\(Markup.escape(summary))</p>
            <p class="explanation">\(Markup.escape(explanation))</p>
            \(notes.map { "<p class=\"notes\">\(Markup.escape($0))</p>" }.joined(separator: "\n"))
            <div class="legend">\(legend)</div>
            \(svg)
            <script>\(Self.layoutScript)</script>
            </body></html>

            """
    }

    /// Lays the timeline out for the window's width, and labels inside or beside their bars.
    static let layoutScript = """
        (function(){
        const svg=document.getElementById('timeline');if(!svg)return;
        const left=+svg.dataset.left,right=+svg.dataset.right,span=+svg.dataset.span;
        const height=+svg.getAttribute('height');
        function layout(){
          const width=Math.max(480,svg.clientWidth||document.documentElement.clientWidth-40);
          const plot=width-left-right,scale=plot/span;
          svg.setAttribute('viewBox','0 0 '+width+' '+height);
          const x=t=>left+t*scale;
          svg.querySelectorAll('g.scaled').forEach(g=>g.setAttribute('transform','translate('+left+' 0) scale('+scale+' 1)'));
          svg.querySelectorAll('rect[data-t0]').forEach(r=>{const x0=x(+r.dataset.t0);
            r.setAttribute('x',x0);r.setAttribute('width',Math.max(+r.dataset.min||0,x(+r.dataset.t1)-x0));});
          svg.querySelectorAll('line[data-t0]').forEach(l=>{l.setAttribute('x1',x(+l.dataset.t0));l.setAttribute('x2',x(+l.dataset.t1));});
          svg.querySelectorAll('text.tick').forEach(t=>t.setAttribute('x',x(+t.dataset.t0)));
          svg.querySelectorAll('path.cancelled-mark').forEach(p=>{const m=p.getAttribute('transform').match(/ ([-0-9.e]+)\\)$/);
            p.setAttribute('transform','translate('+x(+p.dataset.t0)+' '+m[1]+')');});
          svg.querySelectorAll('text.label').forEach(t=>{
            const x0=x(+t.dataset.t0),x1=Math.max(x(+t.dataset.t1),x0+2),row=x(+t.dataset.row),w=t.getComputedTextLength();
            const plate=t.previousElementSibling&&t.previousElementSibling.classList.contains('label-plate')?t.previousElementSibling:null;
            const place=(x,anchor,fill,halo,onPlate)=>{t.setAttribute('x',x);t.setAttribute('text-anchor',anchor);t.setAttribute('fill',fill);t.setAttribute('stroke',halo);
              if(plate){plate.setAttribute('visibility',onPlate?'visible':'hidden');plate.setAttribute('x',x-w-2);plate.setAttribute('width',w+4);}};
            if(t.dataset.inside==='true'&&w+8<=x1-x0)place(x0+4,'start','#fff','none',false);
            else if(x1+4+w<=width-right)place(x1+4,'start','#222','#fff',false);
            else if(row-4-w>=2)place(row-4,'end','#222','#fff',false);
            else place(Math.max(x0-4,w+4),'end','#222','#fff',true);
          });
        }
        layout();let pending=0;
        window.addEventListener('resize',()=>{cancelAnimationFrame(pending);pending=requestAnimationFrame(layout);});
        })();
        """
}
