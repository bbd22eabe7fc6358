"""The course's colours, in one place: tokens (notebook 01) and sampling plots and panel (07)."""

# soft, readable background colours for token spans, cycled token by token (notebook 01)
TOKEN_COLORS = ["#ffd6a5", "#caffbf", "#9bf6ff", "#bdb2ff", "#ffc6ff", "#fdffb6", "#a0c4ff", "#ffadad"]

# one colour per token id in the sampling plots (cycled every 12 ids) (notebook 07)
SAMPLING_COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
                   "#8c8c8c", "#ccb974", "#64b5cd", "#1f77b4", "#ff7f0e"]

# the sampling panel's bars and strip cycle through the first ten (notebook 07)
PANEL_COLORS = SAMPLING_COLORS[:10]
