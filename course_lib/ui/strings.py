"""Every human-readable string course_lib shows in a notebook, once per language.

Read through :func:`course_lib.ui.language.text` (the language is chosen with
``set_language``). Keys are grouped by the module that shows them; a ``{placeholder}`` is
filled in by that module, and both languages have the same placeholders
(tests/test_language.py). Terminology follows the Chinese interface article
(shared/articles/001_…): 词元, 嵌入, 注意力, 残差, 层归一化, 温度, 采样, 词表, logits.
"""

EN = {
    # -- plots.py (02–07)
    "plot.token_table": "token table E",
    "plot.position_table": "position table P",
    "plot.attention_title": "attention weights (rows: queries)",
    "plot.masked": "0\n(masked)",
    "plot.key_position": "source position (key)",
    "plot.query_position": "query position",
    "plot.relu": "ReLU (five-token model)",
    "plot.gelu": "GELU, tanh form (GPT-2)",
    "plot.activation_input": "input to the activation",
    "plot.temperature_axis": "temperature τ (log scale)",
    "plot.probability": "probability",
    "plot.ranked_probability": "probability (ranked)",
    "plot.running_sum": "running sum",
    "plot.observed": "observed ({draws} draws)",
    "plot.target": "target probability",
    "plot.frequency": "frequency",
    "plot.before": "before",
    "plot.renormalised": "renormalised",
    "plot.head": "head {n}",
    "plot.lab_key_axis": "key position (article numbering, token)",
    "plot.lab_heads_title": "row 6 (␣roof): attention weights per head",
    # -- diagrams.py (01 merge loop, 03 causal mask and heads, 07 KV cache)
    "diagram.merge_title": "the merge loop of {word}",
    "diagram.merge_step": "step {n}",
    "diagram.merge_start": "start: one symbol per byte",
    "diagram.merge_pair": "merge {a} + {b} → {ab}",
    "diagram.merge_rank": " (rank {rank} in vocab.bpe)",
    "diagram.merge_end": "no pair left to merge: {n} piece(s)",
    "diagram.mask_title": "the causal mask: which keys each query may read",
    "diagram.mask_keys": "key position (read)",
    "diagram.mask_queries": "query position (reading)",
    "diagram.mask_reads": "reads {n}",
    "diagram.mask_read": "✓ may read (key ≤ query)",
    "diagram.mask_masked": "−∞ masked (a future key)",
    "diagram.heads_title": "splitting D = {D} features into {H} heads of head_dim = {d}",
    "diagram.heads_before": "x: [T, D] = [{T}, {D}]",
    "diagram.heads_after": "[n_head, T, head_dim] = [{H}, {T}, {d}]",
    "diagram.heads_reshape": "view\ntranspose",
    "diagram.kv_title": "generating with a KV cache: {saved} fewer K/V rows computed",
    "diagram.kv_with": "with the KV cache",
    "diagram.kv_without": "without: everything recomputed",
    "diagram.kv_step": "step {n}",
    "diagram.kv_prompt": " (prompt)",
    "diagram.kv_computed": "{n} computed",
    "diagram.kv_total": "K/V rows computed in all: {n}",
    "diagram.kv_new": "K/V row computed at this step",
    "diagram.kv_cached": "K/V row read back from the cache",
    # -- recorded.py (05, 07)
    "recorded.label": ("RECORDED by the article with pretrained GPT-2, not computed here\n"
                       " (run with the weights to compute it yourself)"),
    "recorded.top5_head": "GPT-2's five most likely next tokens after {prompt}:",
    "recorded.top5_columns": "  {rank:>4}  {token:<8}  probability",
    "recorded.rank": "rank",
    "recorded.token": "token",
    "recorded.chart_title": "after {prompt}: recorded by the article (pretrained GPT-2)",
    "recorded.chart_note": "not computed here: run with the weights to compute it yourself",
    "recorded.greedy": "greedy picks id {id} = {token}: {text}",
    "recorded.top_p": ("top-p 0.9 keeps {kept_united} token after '…the 44th President of the United' "
                       "({top}, p = {p:.3f})\ntop-p 0.9 keeps {kept_once} tokens after {once}"),
    # -- pipeline_map.py (01–07): stage names and what each computes
    "map.ids": "ids", "map.embeddings": "embeddings", "map.attention": "attention",
    "map.block": "block", "map.lm_head": "lm_head", "map.logits": "logits", "map.loss": "loss",
    "map.sampling": "sampling", "map.next id": "next id",
    "map.what.ids": "text →\ntoken ids", "map.what.embeddings": "E[id] + P[t]",
    "map.what.attention": "read earlier\npositions", "map.what.block": "residual,\nLayerNorm, MLP",
    "map.what.lm_head": "h · every\nrow of W", "map.what.logits": "one score\nper id",
    "map.what.loss": "training:\n−log p(target)", "map.what.sampling": "generation:\npick one id",
    "map.what.next id": "append,\nrun again",
    "map.notebook": "notebook {nb}",
    "map.here_marker": "▲ you are here",
    "map.loop": "append the new id and run the model again",
    "map.text": "the pipeline: {line}\n              {end}\nyou are here: {here} (notebook {notebooks})",
    # -- panel.py (07): the sampling panel
    "panel.greedy": "greedy",
    "panel.off": "off",
    "panel.ranked_strip": " · strip in ranked order",
    "panel.label": "{head} · top-k {k} · top-p {p} · min-p {m} · u={u:.3f}{strip}",
    "panel.kept": "kept {n} of {V}:",
    "panel.more": "  … and {n} more",
    "panel.lands": "u={u:.3f} lands in [{start:.3f}, {end:.3f}) → {token} (id {id})",
    "panel.chosen": "◀ chosen",
    "panel.token": "token",
    "panel.bars_legend": "grey: p after T · colour: p′ renormalised",
    "panel.strip": "interval strip [0, 1), red line = u",
    "panel.temperature": "temperature",
    "panel.greedy_box": "greedy (argmax)",
    "panel.top_k": "top-k (0=off)",
    "panel.top_p": "top-p (1=off)",
    "panel.min_p": "min-p (0=off)",
    "panel.order": "strip order",
    "panel.order_id": "id",
    "panel.order_ranked": "ranked",
    "panel.append": "append chosen token",
    "panel.reset": "reset",
    "panel.stopped_end": "stopped: the end id {id} was chosen",
    "panel.stopped_full": "stopped: the position table holds {n} rows",
    # -- decoding/generate.py (07): why a generation stopped, one line per Generation.stopped_by
    "generate.stopped_by.end id": "end id",
    "generate.stopped_by.length": "length limit",
    "panel.titled": "{title}: ",
    "panel.context": "{text!r}  ids {ids}",
    # -- token_display.py (01): the token playground
    "tokens.too_long": ("<p><b>The text has {n:,} characters; showing the tokens of the first "
                        "{max:,} only</b> (encode the whole text with "
                        "<code>gpt2_encoding().encode(text)</code>).</p>"),
    "tokens.count": "{n} tokens: {ids}",
    "tokens.playground": "token playground (interactive in JupyterLab): {text}",
    "tokens.partial": "(bytes {hex}: part of a character)",
    "tokens.tooltip": "id {id} · bytes {hex}",
    "tokens.box": "text",
    # -- checks.py and figures/registry.py (the closing Checks cell of 01–07)
    "checks.headline": "✓ {n} value{s_n} of {f} figure{s_f} match the articles",
    "checks.show_all": "show all {n} checked values",
    "checks.course_band": "   (expected {article} ± {tol:g}: the course's own band)",
    "checks.accepted": "   (article: {article}; accepted within {tol:g}, reason in the registry)",
    # -- hints.py (all notebooks)
    "hints.name_error": ("`{name}` is defined by an earlier cell of this notebook: run the notebook from "
                         "the top (Kernel → Restart Kernel and Run All Cells…), or run the cells above this "
                         "one first."),
    # -- start.py (every notebook's first cell; the cell writes the same line out, for course_lib itself)
    "start.missing": ("{name} is not installed for this kernel: in the course's folder run `pip install -e .`, "
                      "then restart the kernel (README: Install where you already are)"),
    # -- token_display.py (01): the columns of format_token_table, separated by "|"
    "tokens.table_columns": "id|bytes (hex)|as text|shown|held back|code point",
    # -- gpt2/fetch.py (05, 07): what a GPT-2 cell prints when the weights are not on this machine
    "gpt2.download_hint": ("[GPT-2 weights not found: this cell would {what}. To get them (548 MB, once), run "
                           "this in a cell:\n    {call}\nor set {env}; see the README.]"),
    # -- exercises/core.py (the frame of every exercise check; the hints and ✓ lines: exercises/messages_zh.py)
    "exercise.not_attempted": "not attempted yet: write the function above, then run both cells",
    "exercise.pass_function": "pass your function itself, e.g. check_{name}({name})",
}

ZH = {
    # -- plots.py
    "plot.token_table": "词元表 E",
    "plot.position_table": "位置表 P",
    "plot.attention_title": "注意力权重（每行一个查询）",
    "plot.masked": "0\n（已遮盖）",
    "plot.key_position": "被读取的位置（键）",
    "plot.query_position": "查询位置",
    "plot.relu": "ReLU（五词元模型）",
    "plot.gelu": "GELU，tanh 近似（GPT-2）",
    "plot.activation_input": "激活函数的输入",
    "plot.temperature_axis": "温度 τ（对数刻度）",
    "plot.probability": "概率",
    "plot.ranked_probability": "概率（从大到小）",
    "plot.running_sum": "累计和",
    "plot.observed": "实际频率（{draws} 次抽取）",
    "plot.target": "目标概率",
    "plot.frequency": "频率",
    "plot.before": "过滤前",
    "plot.renormalised": "重新归一化后",
    "plot.head": "头 {n}",
    "plot.lab_key_axis": "键的位置（按文章编号，词元）",
    "plot.lab_heads_title": "第 6 行（␣roof）：每个头的注意力权重",
    # -- diagrams.py
    "diagram.merge_title": "{word} 的合并循环",
    "diagram.merge_step": "第 {n} 步",
    "diagram.merge_start": "开始：每个字节一个符号",
    "diagram.merge_pair": "合并 {a} + {b} → {ab}",
    "diagram.merge_rank": "（vocab.bpe 中排第 {rank}）",
    "diagram.merge_end": "没有可合并的对了：{n} 个片段",
    "diagram.mask_title": "因果遮盖：每个查询能读取哪些键",
    "diagram.mask_keys": "键的位置（被读取）",
    "diagram.mask_queries": "查询位置（读取方）",
    "diagram.mask_reads": "读取 {n} 个",
    "diagram.mask_read": "✓ 可以读取（键 ≤ 查询）",
    "diagram.mask_masked": "−∞ 已遮盖（未来的键）",
    "diagram.heads_title": "把 D = {D} 个特征分给 {H} 个头，每个头 head_dim = {d}",
    "diagram.heads_before": "x：[T, D] = [{T}, {D}]",
    "diagram.heads_after": "[n_head, T, head_dim] = [{H}, {T}, {d}]",
    "diagram.heads_reshape": "重塑（view）\n转置（transpose）",
    "diagram.kv_title": "用 KV 缓存生成：少算 {saved} 行 K/V",
    "diagram.kv_with": "使用 KV 缓存",
    "diagram.kv_without": "不用缓存：每步全部重算",
    "diagram.kv_step": "第 {n} 步",
    "diagram.kv_prompt": "（提示词）",
    "diagram.kv_computed": "计算 {n} 行",
    "diagram.kv_total": "共计算 K/V {n} 行",
    "diagram.kv_new": "本步计算的 K/V 行",
    "diagram.kv_cached": "从缓存读回的 K/V 行",
    # -- recorded.py
    "recorded.label": ("文章用预训练 GPT-2 记录的结果，不是在本机计算的\n"
                       "（有了权重即可自己计算）"),
    "recorded.top5_head": "在 {prompt} 之后，GPT-2 最可能的五个下一个词元：",
    "recorded.top5_columns": "  {rank:>4}  {token:<8}  概率",
    "recorded.rank": "名次",
    "recorded.token": "词元",
    "recorded.chart_title": "{prompt} 之后：文章记录的结果（预训练 GPT-2）",
    "recorded.chart_note": "不是在本机计算的：有了权重即可自己计算",
    "recorded.greedy": "贪心解码选中 id {id} = {token}：{text}",
    "recorded.top_p": ("在 '…the 44th President of the United' 之后，top-p 0.9 保留 {kept_united} 个词元\n"
                       "  （{top}，p = {p:.3f}）\n在 {once} 之后，top-p 0.9 保留 {kept_once} 个词元"),
    # -- pipeline_map.py
    "map.ids": "词元 id", "map.embeddings": "嵌入", "map.attention": "注意力",
    "map.block": "Transformer 块", "map.lm_head": "输出层", "map.logits": "logits", "map.loss": "损失",
    "map.sampling": "采样", "map.next id": "下一个 id",
    "map.what.ids": "文本 → 词元 id", "map.what.embeddings": "E[id] + P[t]",
    "map.what.attention": "读取前面的位置", "map.what.block": "残差、层归一化、\nMLP",
    "map.what.lm_head": "h · W 的每一行", "map.what.logits": "每个 id 一个分数",
    "map.what.loss": "训练：\n−log p(目标)", "map.what.sampling": "生成：\n选出一个 id",
    "map.what.next id": "追加，\n再运行一次",
    "map.notebook": "笔记本 {nb}",
    "map.here_marker": "▲ 你在这里",
    "map.loop": "把新的 id 追加到序列末尾，再运行一次模型",
    "map.text": "流程：{line}\n      {end}\n你在这里：{here}（笔记本 {notebooks}）",
    # -- panel.py
    "panel.greedy": "贪心",
    "panel.off": "关",
    "panel.ranked_strip": " · 区间条按概率排序",
    "panel.label": "{head} · top-k {k} · top-p {p} · min-p {m} · u={u:.3f}{strip}",
    "panel.kept": "保留 {n} 个（共 {V} 个）：",
    "panel.more": "  … 还有 {n} 个",
    "panel.lands": "u={u:.3f} 落在 [{start:.3f}, {end:.3f}) → {token}（id {id}）",
    "panel.chosen": "◀ 选中",
    "panel.token": "词元",
    "panel.bars_legend": "灰色：温度之后的 p · 彩色：重新归一化的 p′",
    "panel.strip": "区间条 [0, 1)，红线 = u",
    "panel.temperature": "温度",
    "panel.greedy_box": "贪心（argmax）",
    "panel.top_k": "top-k（0=关）",
    "panel.top_p": "top-p（1=关）",
    "panel.min_p": "min-p（0=关）",
    "panel.order": "区间条顺序",
    "panel.order_id": "按 id",
    "panel.order_ranked": "按概率",
    "panel.append": "追加选中的词元",
    "panel.reset": "重置",
    "panel.stopped_end": "已停止：选中了结束 id {id}",
    "panel.stopped_full": "已停止：位置表只有 {n} 行",
    "generate.stopped_by.end id": "选中了结束 id",
    "generate.stopped_by.length": "达到长度上限",
    "panel.titled": "{title}：",
    "panel.context": "{text!r}  词元 id {ids}",
    # -- token_display.py
    "tokens.too_long": ("<p><b>这段文本有 {n:,} 个字符；只显示前 {max:,} 个字符的词元</b>"
                        "（对整段文本编码请用 <code>gpt2_encoding().encode(text)</code>）。</p>"),
    "tokens.count": "{n} 个词元：{ids}",
    "tokens.playground": "词元演示框（在 JupyterLab 中可交互）：{text}",
    "tokens.partial": "（字节 {hex}：一个字符的一部分）",
    "tokens.tooltip": "id {id} · 字节 {hex}",
    "tokens.box": "文本",
    # -- checks.py and figures/registry.py
    "checks.headline": "✓ {n} 个数值（{f} 个图表）与文章一致",
    "checks.show_all": "显示全部 {n} 个已检查的数值",
    "checks.course_band": "   （期望 {article} ± {tol:g}：课程自己的容差带）",
    "checks.accepted": "   （文章：{article}；在 {tol:g} 以内接受，理由见注册表）",
    # -- hints.py
    "hints.name_error": ("`{name}` 由本笔记本前面的单元格定义：请从头运行笔记本"
                         "（Kernel → Restart Kernel and Run All Cells…），或先运行它上面的单元格。"),
    # -- start.py
    "start.missing": ("此内核的 Python 没有安装 {name}：请在课程文件夹中运行 `pip install -e .`，"
                      "然后重启内核（见 README.zh-CN.md：在已有的环境中安装）"),
    # -- token_display.py：format_token_table 的各列（以 "|" 分隔）
    "tokens.table_columns": "id|十六进制字节|按文本解码|显示|暂扣|码位",
    # -- gpt2/fetch.py（05、07）：本机没有权重时，GPT-2 单元格打印的内容
    "gpt2.download_hint": ("[没有找到 GPT-2 的权重：这个单元格本来会\n  {what}。\n"
                           "要获取权重（548 MB，只需一次），请在一个单元格中运行：\n    {call}\n"
                           "或者设置 {env}；见 README.zh-CN.md。]"),
    # -- exercises/core.py
    "exercise.not_attempted": "尚未作答：先写好上面的函数，再运行这两个单元格",
    "exercise.pass_function": "请传入函数本身，例如 check_{name}({name})",
}

STRINGS = {"en": EN, "zh": ZH}
