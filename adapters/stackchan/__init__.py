"""The xiaozhi proxy body: a StackChan running stock xiaozhi firmware, given a soul without reflashing."""
