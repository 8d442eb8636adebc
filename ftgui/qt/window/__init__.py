"""The main window and the application: layout, menus and their actions, top bar, controller, view
modes, About."""
