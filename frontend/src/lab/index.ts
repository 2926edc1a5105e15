/**
 * The JupyterLab (and Notebook 7) plugin: the gmchat side panel in the right sidebar, the command
 * `gmchat:open` ("Open gmchat") in the palette, and the panel restored on reload. It requires only
 * what Notebook 7 provides too: the palette, the layout restorer, the notebook tracker and the
 * settings are optional.
 */

import { ILayoutRestorer, type JupyterFrontEnd, type JupyterFrontEndPlugin } from "@jupyterlab/application";
import { ICommandPalette } from "@jupyterlab/apputils";
import { INotebookTracker } from "@jupyterlab/notebook";
import { ISettingRegistry } from "@jupyterlab/settingregistry";

import { ChatPanel, PANEL_ID } from "./panel";

export const PLUGIN_ID = "gmchat-nb:plugin";
export const OPEN_COMMAND = "gmchat:open";
const DEFAULT_URL = "gmchat/chat/";

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: "The gmchat side panel: chat about the project's data beside the notebooks.",
  autoStart: true,
  optional: [ICommandPalette, ILayoutRestorer, INotebookTracker, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    tracker: INotebookTracker | null,
    registry: ISettingRegistry | null,
  ): void => {
    // The routes' path (the setting `url`); the panel connects once it is known.
    const url: Promise<string> = registry
      ? registry
          .load(PLUGIN_ID)
          .then((settings) => {
            const value = settings.get("url").composite;
            return typeof value === "string" && value.trim() ? value.trim() : DEFAULT_URL;
          })
          .catch(() => DEFAULT_URL) // no schema installed: the default
      : Promise.resolve(DEFAULT_URL);
    const panel = new ChatPanel({ app, tracker, url });
    app.shell.add(panel, "right", { rank: 950 });
    app.commands.addCommand(OPEN_COMMAND, {
      label: "Open gmchat",
      caption: "Show the gmchat side panel",
      execute: () => {
        if (!panel.isAttached) app.shell.add(panel, "right", { rank: 950 });
        app.shell.activateById(PANEL_ID);
      },
    });
    palette?.addItem({ command: OPEN_COMMAND, category: "gmchat" });
    restorer?.add(panel, PANEL_ID);
  },
};

export default plugin;
